// StallWatch: the spec's stall_seconds. A job whose workers all print nothing for that long while
// running is hung (the classic: one worker stuck in "TPU backend initialization is taking more
// than 60 seconds" while the others wait on it): reported, and handled as a failure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace podrun {

class StallWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // Watches from `start` on (no output yet counts from there). With `on_stall`, a thread checks
  // every kCheckInterval and calls it once, from that thread, with how long the job was silent.
  StallWatch(std::chrono::seconds limit, Clock::time_point start,
             std::function<void(std::chrono::seconds silent)> on_stall = {});
  ~StallWatch();  // stops the thread
  StallWatch(const StallWatch&) = delete;
  StallWatch& operator=(const StallWatch&) = delete;

  // Some worker printed something at `now`. Thread-safe and cheap (an atomic store).
  void Output(Clock::time_point now = Clock::now());
  // How long the job has been silent at `now` if that reaches the limit, else nullopt. Pure:
  // what the thread asks, and what tests ask with their own clock.
  std::optional<std::chrono::seconds> Check(Clock::time_point now) const;
  // The launcher was not running from `from` to `to` (SIGSTOP, a suspended laptop): what the
  // workers printed meanwhile is still on its way, so that time is not the job's silence.
  // Thread-safe. The thread calls it when it wakes kNotWatchedAfter or more after its last check.
  void NotWatched(Clock::time_point from, Clock::time_point to);

  static constexpr auto kCheckInterval = std::chrono::milliseconds(200);
  static constexpr auto kNotWatchedAfter = std::chrono::seconds(1);

 private:
  void Run();

  const std::chrono::seconds limit_;
  std::atomic<int64_t> last_ns_;  // Clock's time since epoch of the last output
  std::function<void(std::chrono::seconds)> on_stall_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace podrun
