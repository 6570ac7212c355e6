// See step_tracker.h.
#include "launcher/insight/step_tracker.h"

#include <fmt/format.h>

#include <algorithm>

namespace podrun {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
// A rate needs this much time between the window's first point and now.
constexpr int64_t kMinRateSpanNs = 2 * kSecondNs;

std::optional<double> Median(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

StepTracker::StepTracker(bool enabled, const std::vector<int>& workers, StragglerRule rule)
    : enabled_(enabled),
      rule_(rule),
      // The rate is taken over the straggler time, within 5 s to 60 s.
      window_ns_(std::clamp<int64_t>(rule.after.count(), 5, 60) * kSecondNs) {
  for (int index : workers) {
    auto w = std::make_unique<Worker>();
    w->progress.worker = index;
    workers_.emplace(index, std::move(w));
  }
}

void StepTracker::Update(int worker, const AgentSteps& steps, int64_t clock_offset_ns) {
  if (!enabled_ || !steps.step) return;
  auto it = workers_.find(worker);
  if (it == workers_.end()) return;
  Worker& w = *it->second;
  std::lock_guard lock(w.mutex);
  WorkerProgress& p = w.progress;
  const int64_t step_ns = steps.step_ns - clock_offset_ns;
  if (p.step != steps.step || p.step_ns != step_ns) {
    if (p.step != steps.step) w.behind_named = false;
    p.step = steps.step;
    p.step_ns = step_ns;
    p.first_step_ns = steps.first_step_ns - clock_offset_ns;
    w.changed = true;
  }
  w.window.clear();
  for (const AgentStepPoint& point : steps.recent) {
    w.window.push_back({point.time_ns - clock_offset_ns, point.step});
  }
  std::vector<StepSample> samples;
  samples.reserve(steps.samples.size());
  for (const AgentStepPoint& s : steps.samples) {
    samples.push_back({s.time_ns - clock_offset_ns, s.step});
  }
  if (samples != w.samples) {
    w.samples = std::move(samples);
    w.samples_changed = true;
  }
}

std::optional<double> StepTracker::Rate(const Worker& w, int64_t now_ns) const {
  if (w.window.size() < 2) return std::nullopt;
  // The baseline: the newest point at or before the window's start, else the oldest.
  const Point* base = &w.window.front();
  for (const Point& p : w.window) {
    if (p.time_ns <= now_ns - window_ns_) base = &p;
  }
  const int64_t span = now_ns - base->time_ns;
  if (span < kMinRateSpanNs) return std::nullopt;
  return static_cast<double>(w.window.back().step - base->step) * kSecondNs /
         static_cast<double>(span);
}

void StepTracker::Ended(int worker) {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return;
  std::lock_guard lock(it->second->mutex);
  it->second->ended = true;
}

bool StepTracker::IsEnded(int worker) const {
  auto it = workers_.find(worker);
  if (it == workers_.end()) return true;
  std::lock_guard lock(it->second->mutex);
  return it->second->ended;
}

std::vector<std::string> StepTracker::Check(int64_t now_ns) {
  std::vector<std::string> said;
  if (!enabled_) return said;
  // First the rates (each worker's lock alone), then the rules over the gang.
  struct Seen {
    Worker* w;
    std::optional<double> rate;
    std::optional<int64_t> step, step_ns;
    bool ended;
  };
  std::vector<Seen> seen;
  std::vector<double> rates, intervals;
  for (auto& [index, w] : workers_) {
    std::lock_guard lock(w->mutex);
    Seen s{w.get(), Rate(*w, now_ns), w->progress.step, w->progress.step_ns, w->ended};
    // Its time per step while it stepped (not counting since: a hang stops every worker).
    if (w->window.size() >= 2 && w->window.back().step > w->window.front().step) {
      intervals.push_back(
          static_cast<double>(w->window.back().time_ns - w->window.front().time_ns) /
          static_cast<double>(w->window.back().step - w->window.front().step));
    }
    if (s.rate != w->progress.steps_per_s) {
      w->progress.steps_per_s = s.rate;
      w->changed = true;
    }
    if (s.rate && !s.ended) rates.push_back(*s.rate);
    seen.push_back(s);
  }
  // 0: no median (fewer than two rates) or a gang that makes no steps.
  const double median = rates.size() >= 2 ? Median(rates).value_or(0) : 0;
  const int64_t behind_after =
      std::max<int64_t>(std::chrono::nanoseconds(kBehindAfter).count(),
                        static_cast<int64_t>(5 * Median(intervals).value_or(0)));
  for (const Seen& s : seen) {
    Worker& w = *s.w;
    const int index = w.progress.worker;
    // Behind: another worker is past its step and it has not stepped for behind_after.
    std::optional<int64_t> ahead;
    for (const Seen& o : seen) {
      if (o.w != s.w && o.step && !o.ended && (!ahead || *o.step > *ahead)) ahead = o.step;
    }
    std::lock_guard lock(w.mutex);
    if (!s.ended && s.step && ahead && *ahead > *s.step && !w.behind_named &&
        now_ns - *s.step_ns >= behind_after) {
      w.behind_named = true;
      said.push_back(
          fmt::format("w{} stopped at step {} for {:.0f} s while another worker is at {}", index,
                      *s.step, static_cast<double>(now_ns - *s.step_ns) / 1e9, *ahead));
    }
    // Straggler: its rate below ratio x median for straggler_seconds.
    if (s.ended || !s.rate || median <= 0) {
      w.below_since_ns.reset();
      continue;
    }
    const bool below = *s.rate < rule_.ratio * median;
    const std::string figures = fmt::format("{:.2f} steps/s vs median {:.2f}", *s.rate, median);
    if (below) {
      if (!w.below_since_ns) w.below_since_ns = now_ns;
      const bool long_enough =
          now_ns - *w.below_since_ns >= std::chrono::nanoseconds(rule_.after).count();
      if (long_enough && !w.progress.straggler) {
        said.push_back(fmt::format("w{} is a straggler: {}", index, figures));
      }
      const StragglerNote note{.steps_per_s = *s.rate, .median_steps_per_s = median};
      if (long_enough &&
          note.Text() != (w.progress.straggler ? w.progress.straggler->Text() : "")) {
        w.progress.straggler = note;
        w.changed = true;
      }
    } else {
      w.below_since_ns.reset();
      if (w.progress.straggler) {
        said.push_back(fmt::format("w{} is no longer a straggler: {}", index, figures));
        w.progress.straggler.reset();
        w.changed = true;
      }
    }
  }
  return said;
}

std::vector<WorkerProgress> StepTracker::Progress() const {
  std::vector<WorkerProgress> out;
  for (const auto& [index, w] : workers_) {
    std::lock_guard lock(w->mutex);
    out.push_back(w->progress);
  }
  return out;
}

void StepTracker::TakeChanges(std::vector<WorkerProgress>* progress,
                              std::vector<StepSamplesUpdate>* samples) {
  for (auto& [index, w] : workers_) {
    std::lock_guard lock(w->mutex);
    if (w->changed) progress->push_back(w->progress);
    w->changed = false;
    // The worker's samples replace those recorded before (it thins them itself).
    if (w->samples_changed)
      samples->push_back({.worker = index, .replace = true, .samples = w->samples});
    w->samples_changed = false;
  }
}

}  // namespace podrun
