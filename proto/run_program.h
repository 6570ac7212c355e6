// Running a program and collecting its output: shared by the launcher (gcloud) and the agent
// (mount commands).
#pragma once

#include <string>
#include <vector>

namespace podrun {

struct ProgramResult {
  int exit_code = -1;  // -1: could not run it; 128+N: killed by signal N
  std::string out, err;
};

// Runs argv (argv[0] searched on PATH) with stdin from /dev/null and the caller's environment,
// and waits for it, collecting stdout and stderr whole (for programs whose output is small).
ProgramResult RunProgram(const std::vector<std::string>& argv);

}  // namespace podrun
