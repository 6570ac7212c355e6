// How a worker's command or job process ended, by the contract's rules, and the one way podrun
// words it (exec, launch, logs, status and stop all use these).
#pragma once

#include <optional>
#include <string>

namespace podrun {

// How a remote command ended: an exit code, or the name of the signal that killed it.
struct ExitStatus {
  std::optional<int> exit_code;
  std::string signal;  // e.g. "KILL"; empty if it exited
  // A failure by the contract's rules: non-zero exit, signal, or no status at all.
  bool failed() const { return !exit_code || *exit_code != 0; }
  std::string ToString() const;  // as DescribeExit
};

// "exit code 3", "killed by signal 9 (SIGKILL)", or "no exit status".
std::string DescribeExit(std::optional<int> exit_code, std::optional<int> signal);
// For tables: "3", "SIGKILL", or "-".
std::string ShortExit(std::optional<int> exit_code, std::optional<int> signal);

}  // namespace podrun
