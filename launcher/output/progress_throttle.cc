// Rate limit for progress states.
#include "launcher/output/progress_throttle.h"

namespace podrun {

ProgressThrottle::ProgressThrottle(std::chrono::steady_clock::duration interval,
                                   SteadyClockFn clock)
    : interval_(interval), clock_(std::move(clock)) {
  if (!clock_) clock_ = [] { return std::chrono::steady_clock::now(); };
}

bool ProgressThrottle::Offer(int worker, std::string_view state) {
  auto now = clock_();
  auto it = last_printed_.find(worker);
  if (it == last_printed_.end() || now - it->second >= interval_) {
    last_printed_[worker] = now;
    kept_.erase(worker);
    return true;
  }
  kept_[worker].assign(state);
  return false;
}

void ProgressThrottle::TakeDue(const std::function<void(int, std::string_view)>& print) {
  if (kept_.empty()) return;
  auto now = clock_();
  for (auto it = kept_.begin(); it != kept_.end();) {
    auto& last = last_printed_[it->first];
    if (now - last >= interval_) {
      last = now;
      print(it->first, it->second);
      it = kept_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace podrun
