// Per-worker outcomes and their aggregation.
#include "launcher/commands/outcome.h"

#include <fmt/format.h>

namespace podrun {

std::string WorkerOutcome::Describe() const {
  if (unreachable) return "unreachable: " + error;
  if (lost) return "lost: " + error;
  return status.ToString();
}

ExitCode AggregateExitCode(const std::vector<WorkerOutcome>& outcomes) {
  bool failed = false;
  for (const WorkerOutcome& o : outcomes) {
    if (o.unreachable) return ExitCode::kUnreachable;
    if (!o.ok()) failed = true;
  }
  return failed ? ExitCode::kFailed : ExitCode::kOk;
}

std::string SummarizeFailures(const std::vector<WorkerOutcome>& outcomes) {
  std::vector<std::string> parts;
  for (const WorkerOutcome& o : outcomes) {
    if (o.ok()) continue;
    std::string what = o.unreachable ? "unreachable" : o.lost ? "lost" : o.status.ToString();
    parts.push_back(fmt::format("w{} ({})", o.worker, what));
  }
  if (parts.empty()) return "";
  return fmt::format("{} of {} workers failed: {}", parts.size(), outcomes.size(),
                     fmt::join(parts, ", "));
}

}  // namespace podrun
