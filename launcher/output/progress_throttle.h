// ProgressThrottle: decides when a worker's latest progress state (a '\r' redraw, see
// LineSplitter) is printed: at most once per interval per worker, always the latest state,
// never a state that its line's final text has replaced. Not thread-safe; its owner serializes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace podrun {

using SteadyClockFn = std::function<std::chrono::steady_clock::time_point()>;

// How often a progress state is printed (docs/reference.md, Output).
inline constexpr auto kTerminalProgressInterval = std::chrono::milliseconds(250);
inline constexpr auto kFileProgressInterval = std::chrono::seconds(5);

class ProgressThrottle {
 public:
  ProgressThrottle(std::chrono::steady_clock::duration interval, SteadyClockFn clock);

  // A new state of `worker`. Returns true if it is to be printed now (the time is recorded);
  // otherwise it is kept (replacing an older kept one) until TakeDue.
  bool Offer(int worker, std::string_view state);
  // Calls print(worker, state) for each kept state whose worker may print again now.
  void TakeDue(const std::function<void(int worker, std::string_view state)>& print);
  // `worker`'s line ended: its kept state is no longer worth printing.
  void Drop(int worker) {
    if (!kept_.empty()) kept_.erase(worker);  // per line: the common case costs nothing
  }

 private:
  std::chrono::steady_clock::duration interval_;
  SteadyClockFn clock_;
  std::map<int, std::chrono::steady_clock::time_point> last_printed_;
  std::map<int, std::string> kept_;  // at most one state (<= 64 KiB) per worker
};

}  // namespace podrun
