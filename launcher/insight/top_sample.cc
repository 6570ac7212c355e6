// `podrun top`'s rows from agents' samples (see top_sample.h).
#include "launcher/insight/top_sample.h"

#include <algorithm>
#include <map>

#include "launcher/connect/job_agents.h"
#include "launcher/store/worker_state.h"

namespace podrun {
namespace {

constexpr double kNsPerSecond = 1e9;

// Seconds of the worker's monotonic clock between two samples of the same running process;
// nullopt if they are not comparable.
std::optional<double> Interval(const AgentTopSample& before, const AgentTopSample& now) {
  if (before.state != AgentJobState::kRunning || now.state != AgentJobState::kRunning ||
      before.pid != now.pid || before.start_time_ns != now.start_time_ns ||
      before.sample_monotonic_ns <= 0 || now.sample_monotonic_ns <= before.sample_monotonic_ns) {
    return std::nullopt;
  }
  return static_cast<double>(now.sample_monotonic_ns - before.sample_monotonic_ns) / kNsPerSecond;
}

// How much `now` grew since `before`, per second of `seconds`; a drop counts as no growth.
double Rate(uint64_t before, uint64_t now, double seconds) {
  return now > before ? static_cast<double>(now - before) / seconds : 0.0;
}

bool IsFailed(WorkerState state) {
  return state == WorkerState::kFailed || state == WorkerState::kLost;
}

}  // namespace

std::optional<double> CpuPercent(const AgentTopSample& before, const AgentTopSample& now) {
  const std::optional<double> seconds = Interval(before, now);
  if (!seconds) return std::nullopt;
  return 100.0 * Rate(before.cpu_ns, now.cpu_ns, *seconds) / kNsPerSecond;
}

std::optional<double> OutputRate(const AgentTopSample& before, const AgentTopSample& now) {
  const std::optional<double> seconds = Interval(before, now);
  if (!seconds) return std::nullopt;
  return Rate(before.output_bytes, now.output_bytes, *seconds);
}

std::optional<double> SilentSeconds(const AgentTopSample& sample) {
  if (sample.state != AgentJobState::kRunning) return std::nullopt;
  const int64_t since = std::max(sample.last_output_ns, sample.start_time_ns);
  if (since <= 0) return std::nullopt;
  return static_cast<double>(std::max<int64_t>(sample.now_ns - since, 0)) / kNsPerSecond;
}

TopRow StoreRow(const WorkerRecord& worker, const std::string& note) {
  TopRow row;
  row.worker = worker.index;
  row.host = worker.host;
  row.state = WorkerStateName(worker.state);
  row.failed = IsFailed(worker.state);
  row.exit_code = worker.exit_code;
  row.signal = worker.signal;
  row.note = note.empty() ? worker.error : note;
  return row;
}

TopRow UnreachableRow(const WorkerRecord& worker, const std::string& error) {
  TopRow row = StoreRow(worker, error);
  row.state = "unreachable";
  row.failed = true;
  row.exit_code.reset();
  row.signal.reset();
  return row;
}

TopRow TopRowOf(const WorkerRecord& worker, const std::optional<AgentTopSample>& sample,
                const std::optional<AgentTopSample>& before) {
  if (!sample)
    return StoreRow(worker, "its agent has no record of this attempt: not started there");
  TopRow row = StoreRow(worker, "");
  row.note.clear();
  row.exit_code.reset();
  row.signal.reset();
  if (sample->pid > 0) row.pid = sample->pid;
  if (sample->end) {
    const WorkerState state = StateOfEnd(*sample->end);
    row.state = WorkerStateName(state);
    row.failed = IsFailed(state);
    row.exit_code = sample->end->exit_code;
    row.signal = sample->end->signal;
    if (sample->end->lost) row.note = DescribeProcessEnd(*sample->end);
  } else if (sample->state == AgentJobState::kRunning) {
    row.state = WorkerStateName(WorkerState::kRunning);
    row.failed = false;
    row.cpu_seconds = static_cast<double>(sample->cpu_ns) / kNsPerSecond;
    row.rss_bytes = sample->rss_bytes;
    row.processes = sample->processes;
    row.accelerators = sample->accelerators;
    row.silent_seconds = SilentSeconds(*sample);
    if (before) {
      row.cpu_percent = CpuPercent(*before, *sample);
      row.output_bytes_per_second = OutputRate(*before, *sample);
    }
  } else if (sample->state == AgentJobState::kPrepared) {
    row.state = WorkerStateName(WorkerState::kPending);
    row.failed = false;
    row.note = "prepared; waiting for the start";
  } else {  // an agent that cannot tell: the store's state stands
    row.note = "its agent cannot tell how the process ended";
  }
  row.output_bytes = sample->output_bytes;
  row.last_line = sample->last_line;
  return row;
}

void AddProgress(std::vector<TopRow>& rows, const std::vector<WorkerProgress>& progress) {
  std::map<int, const WorkerProgress*> by_worker;
  for (const WorkerProgress& p : progress) by_worker[p.worker] = &p;
  for (TopRow& row : rows) {
    auto it = by_worker.find(row.worker);
    if (it == by_worker.end()) continue;
    row.step = it->second->step;
    row.step_ns = it->second->step_ns;
    row.steps_per_s = it->second->steps_per_s;
    row.straggler = it->second->straggler.has_value();
    row.straggler_note = it->second->straggler ? it->second->straggler->Text() : "";
  }
}

}  // namespace podrun
