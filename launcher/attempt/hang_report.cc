// See hang_report.h.
#include "launcher/attempt/hang_report.h"

#include <algorithm>
#include <sstream>

#include "launcher/insight/why_gather.h"
#include "launcher/output/say.h"

namespace podrun {
namespace {

constexpr size_t kDetailedWorkers = 4;  // whose processes and stacks are said on a hang
constexpr size_t kKeptStacks = 8;       // whose stacks are kept with the attempt

}  // namespace

std::vector<WhyLine> MakeHangReport(const AttemptPlan& plan, AttemptRecorder& recorder,
                                    AttemptWorkers& workers, const StepTracker* steps) {
  std::vector<WorkerProgress> progress = steps ? steps->Progress() : std::vector<WorkerProgress>{};
  std::vector<WhyTarget> targets;
  for (auto& w : workers.all()) {
    WhyTarget t;
    t.worker = w->index;
    t.description = w->description();
    t.client = [raw = w.get()] { return raw->client(); };
    t.progress.worker = w->index;
    t.clock_offset_ns = w->connection.clock_offset_ns();
    for (const WorkerProgress& p : progress) {
      if (p.worker == w->index) t.progress = p;
    }
    targets.push_back(std::move(t));
  }
  const AgentWhyRequest request{.signal = plan.spec.stacks_signal};
  WhyReport report = GatherWhy(plan.job.id, plan.attempt, targets, request);
  // On the terminal: the verdict and the details of the suspects (one to kDetailedWorkers).
  size_t suspects = 0;
  for (const WhyLine& line : report.verdict) suspects += line.suspect ? 1 : 0;
  std::istringstream text(WhyText(report, 40, std::clamp<size_t>(suspects, 1, kDetailedWorkers)));
  for (std::string line; std::getline(text, line);) {
    if (!line.empty()) Say(line);
  }
  // Kept: every worker's processes, the stacks of the first kKeptStacks workers of the verdict.
  KeepStacksOf(report, kKeptStacks);
  recorder.SetHangReport(
      {.made_ns = report.made_ns,
       .text = WhyText(report),
       .json = WhyJson(report).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)});
  return report.verdict;
}

}  // namespace podrun
