// See why_gather.h.
#include "launcher/insight/why_gather.h"

#include <chrono>

#include "launcher/base/parallel_for.h"

namespace podrun {

WhyReport GatherWhy(const std::string& job_id, int attempt, const std::vector<WhyTarget>& targets,
                    const AgentWhyRequest& request) {
  const auto began = std::chrono::steady_clock::now();
  WhyReport report;
  report.job_id = job_id;
  report.attempt = attempt;
  report.workers.resize(targets.size());
  ParallelFor(
      targets.size(),
      [&](size_t i) {
        const WhyTarget& t = targets[i];
        WorkerWhy& w = report.workers[i];
        w.worker = t.worker;
        w.description = t.description;
        w.progress = t.progress;
        w.clock_offset_ns = t.clock_offset_ns;
        w.error = t.error;
        try {
          std::shared_ptr<AgentClient> client = t.client ? t.client() : nullptr;
          if (!client) {
            if (w.error.empty()) w.error = "not connected";
            w.unreachable = true;
            return;
          }
          w.report = client->Why(job_id, static_cast<uint32_t>(attempt), request);
          if (!w.report) w.error = "its agent has no record of this attempt";
        } catch (const std::exception& e) {
          w.error = e.what();
          w.unreachable = true;
        }
      },
      kWhyThreads);
  report.gather_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  report.made_ns = NowUnixNs();
  MakeVerdict(report, report.made_ns);
  return report;
}

}  // namespace podrun
