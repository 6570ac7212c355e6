// See exit_status.h.
#include "launcher/exit_status.h"

#include <fmt/format.h>

namespace podrun {

std::string ExitStatus::ToString() const {
  if (exit_code) return fmt::format("exit code {}", *exit_code);
  if (!signal.empty()) return fmt::format("killed by signal {}", signal);
  return "no exit status";
}

}  // namespace podrun
