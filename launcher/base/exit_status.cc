// See exit_status.h.
#include "launcher/base/exit_status.h"

#include <fmt/format.h>
#include <string.h>

namespace podrun {

std::string ExitStatus::ToString() const {
  if (exit_code) return DescribeExit(exit_code, std::nullopt);
  if (!signal.empty()) return fmt::format("killed by signal SIG{}", signal);
  return DescribeExit(std::nullopt, std::nullopt);
}

std::string DescribeExit(std::optional<int> exit_code, std::optional<int> signal) {
  if (exit_code) return fmt::format("exit code {}", *exit_code);
  if (signal) {
    const char* name = ::sigabbrev_np(*signal);
    return fmt::format("killed by signal {}{}", *signal, name ? fmt::format(" (SIG{})", name) : "");
  }
  return "no exit status";
}

std::string ShortExit(std::optional<int> exit_code, std::optional<int> signal) {
  if (exit_code) return std::to_string(*exit_code);
  if (signal) {
    const char* name = ::sigabbrev_np(*signal);
    return name ? fmt::format("SIG{}", name) : fmt::format("signal {}", *signal);
  }
  return "-";
}

}  // namespace podrun
