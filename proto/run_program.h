// Running a program and collecting its output: shared by the launcher (gcloud, ssh-keygen) and
// the agent (mount commands).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace podrun {

struct ProgramResult {
  int exit_code = -1;  // -1: could not run it (err says why); 128+N: killed by signal N
  std::string out, err;
  bool interrupted = false;  // a Ctrl-C was noted while it ran: it was stopped (SIGTERM)
  bool timed_out = false;    // it outlived its deadline: it was stopped (SIGTERM, then SIGKILL)
};

// After a Ctrl-C, how long the stopped program has between SIGTERM and SIGKILL.
inline constexpr auto kInterruptedProgramGrace = std::chrono::milliseconds(2000);

// Runs argv (argv[0] searched on PATH) clean (proto/spawn.h) with stdin from /dev/null and the
// caller's environment, and waits for it, collecting stdout and stderr whole (for programs
// whose output is small). A Ctrl-C noted while it runs (proto/interrupt_note.h) ends the wait
// at once: the program's process group gets SIGTERM (SIGKILL after kInterruptedProgramGrace),
// it is reaped, and the result says `interrupted`. Any thread.
ProgramResult RunProgram(const std::vector<std::string>& argv);
// As RunProgram; a program still running `deadline` after its start is stopped the same way and
// the result says `timed_out`: a hung program never holds its caller for ever.
ProgramResult RunProgramWithin(const std::vector<std::string>& argv,
                               std::chrono::milliseconds deadline);

}  // namespace podrun
