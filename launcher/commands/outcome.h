// What happened on each worker, and the command's exit code from that (docs/reference.md).
#pragma once

#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/base/exit_status.h"

namespace podrun {

struct WorkerOutcome {
  int worker = 0;
  std::string host;
  ExitStatus status;         // set when the command ran to its end
  bool unreachable = false;  // not reached, authenticated or bootstrapped: nothing ran
  bool lost = false;         // the connection broke while the command ran
  std::string error;         // the reason, for unreachable or lost workers

  bool ok() const { return !unreachable && !lost && !status.failed(); }
  // "exit code 3", "killed by signal KILL", "unreachable: ...", "lost: ..."
  std::string Describe() const;
};

// 3 if any worker was unreachable, else 1 if any failed or was lost, else 0.
ExitCode AggregateExitCode(const std::vector<WorkerOutcome>& outcomes);

// One line for stderr when not all succeeded, e.g.
// "2 of 8 workers failed: w3 (exit code 1), w5 (unreachable)"; empty when all succeeded.
std::string SummarizeFailures(const std::vector<WorkerOutcome>& outcomes);

}  // namespace podrun
