// The job's start from its plan: the plan the agent hands the supervisor (supervisor.h: workdir,
// run, the progress pattern, then the "KEY=VALUE" entries of the job's environment, which holds
// secrets), and the job's child forked from it (prepared_child.h) with the pipes the supervisor
// reads.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "proto/unique_fd.h"

namespace podrun::agent {

// The forked job as the supervisor holds it.
struct LaunchedJob {
  pid_t pid = 0;      // the job's child, the leader of a session and process group of its own
  UniqueFd out, err;  // the read ends of its stdout and stderr
  UniqueFd ran;       // the read end of its `ran` pipe (prepared_child.h)
};

// Holds the plan, secrets included, from ReadPlan until Launch wipes them. One thread.
class PlanLauncher {
 public:
  // Reads the plan from `fd` up to end-of-file (the bytes read are wiped once decoded). Throws
  // std::runtime_error: a read error, a plan too large, a malformed one.
  void ReadPlan(int fd);

  // Forks the job's child, to run `run` with /bin/bash -lc in the workdir, in the supervisor's
  // environment overridden and extended by the plan's; `go_fd` is the child's end of the go
  // socket, closed here once forked (only the child and the agent hold it then). Once forked,
  // the environment is wiped from memory whether the fork succeeded or not. Throws
  // std::runtime_error (pipes, /dev/null, the fork).
  LaunchedJob Launch(int go_fd);

  const std::string& workdir() const { return workdir_; }
  const std::string& progress() const { return progress_; }  // "" : none

 private:
  std::string workdir_, run_, progress_;
  std::vector<std::string> env_;
};

}  // namespace podrun::agent
