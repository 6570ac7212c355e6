// How a worker's command or job process ended, by the contract's rules.
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
  std::string ToString() const;
};

}  // namespace podrun
