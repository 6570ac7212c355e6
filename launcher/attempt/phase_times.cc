// The phases' times, kept in memory while a phase runs and recorded when it ends (see
// phase_times.h).
#include "launcher/attempt/phase_times.h"

#include <algorithm>
#include <vector>

#include "launcher/store/run_records.h"

namespace podrun {

PhaseTimes::~PhaseTimes() {
  try {
    End();
  } catch (...) {
    // A record that cannot be written is said by the recorder; nothing may escape here.
  }
}

void PhaseTimes::Begin(const std::string& phase) {
  End();
  OpenPhase open{.name = phase, .start_ns = NowUnixNs(), .ends = {}};
  for (const auto& w : workers_.all()) {
    if (w->error.empty()) open.ends.emplace(w->index, std::nullopt);
  }
  std::lock_guard lock(mutex_);
  open_ = std::move(open);
}

void PhaseTimes::Done(int index, std::optional<int64_t> at_ns) {
  const int64_t now = at_ns.value_or(NowUnixNs());
  std::lock_guard lock(mutex_);
  if (!open_) return;
  auto it = open_->ends.find(index);
  if (it != open_->ends.end()) it->second = now;
}

void PhaseTimes::End() {
  std::optional<OpenPhase> open;
  {
    std::lock_guard lock(mutex_);
    open.swap(open_);
  }
  if (!open) return;
  const int64_t now = NowUnixNs();
  std::vector<PhaseRecord> records;
  records.reserve(open->ends.size());
  for (const auto& [index, end] : open->ends) {
    const AttemptWorker* w = workers_.Find(index);
    records.push_back({.worker = index,
                       .phase = open->name,
                       .start_ns = open->start_ns,
                       .end_ns = std::max(open->start_ns, end.value_or(now)),
                       .failed = w != nullptr && !w->error.empty()});
  }
  recorder_.SetPhases(records);
}

}  // namespace podrun
