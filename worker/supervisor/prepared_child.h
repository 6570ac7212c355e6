// The job's prepared process: forked by the supervisor at Prepare, it sets itself up (own
// session and process group, default signals, stdin /dev/null, stdout/stderr to the log pipes)
// and blocks on its end of the "go" socket, whose other end the agent holds. One byte (GO)
// and it changes to the workdir and execs /bin/bash -lc RUN; end-of-file instead (the attempt
// was stopped or replaced before its start, or the agent went away) and it exits running
// nothing. It tells the agent on the go socket (a ChildReport: kReady once set up, or the
// step that failed after GO) and the supervisor on the `ran` pipe (kNotStarted, or the failed
// step); both are close-on-exec, so end-of-file on them after GO means it exec'd.
#pragma once

#include <cstdint>
#include <string>

namespace podrun::agent {

enum ChildStep : int32_t { kReady = 0, kSession, kStdio, kChdir, kExec, kNotStarted };

struct ChildReport {
  int32_t step = kReady;
  int32_t err = 0;  // errno of the failed step
};

// What the child needs, built before the fork: it only makes async-signal-safe calls.
struct ChildPlan {
  int sock = -1;  // the child's end of the go socket
  int ran = -1;   // write end of the pipe to the supervisor
  int devnull = -1, out = -1, err = -1;
  const char* workdir = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// The forked child. Call with every signal blocked; never returns.
[[noreturn]] void RunPreparedChild(const ChildPlan& plan);

// Reads one ChildReport from `fd`; false on end-of-file (or an error) before a whole one.
bool ReadReport(int fd, ChildReport* report);

// "chdir: No such file or directory".
std::string DescribeReport(const ChildReport& report);

inline constexpr char kShell[] = "/bin/bash";

}  // namespace podrun::agent
