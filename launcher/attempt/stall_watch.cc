// The stall watch (see stall_watch.h).
#include "launcher/attempt/stall_watch.h"

#include <algorithm>

namespace podrun {

namespace {
int64_t Ns(StallWatch::Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}
}  // namespace

StallWatch::StallWatch(std::chrono::seconds limit, Clock::time_point start,
                       std::function<void(std::chrono::seconds)> on_stall)
    : limit_(limit), last_ns_(Ns(start)), on_stall_(std::move(on_stall)) {
  if (on_stall_ && limit_.count() > 0) thread_ = std::thread(&StallWatch::Run, this);
}

StallWatch::~StallWatch() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StallWatch::Output(Clock::time_point now) {
  last_ns_.store(Ns(now), std::memory_order_relaxed);
}

std::optional<std::chrono::seconds> StallWatch::Check(Clock::time_point now) const {
  if (limit_.count() <= 0) return std::nullopt;
  const auto silent = std::chrono::nanoseconds(Ns(now) - last_ns_.load(std::memory_order_relaxed));
  if (silent < limit_) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::seconds>(silent);
}

void StallWatch::NotWatched(Clock::time_point from, Clock::time_point to) {
  const int64_t away = Ns(to) - Ns(from);
  if (away <= 0) return;
  int64_t last = last_ns_.load(std::memory_order_relaxed);
  // An Output meanwhile is shifted too, but never past `to`.
  while (!last_ns_.compare_exchange_weak(last, std::min(last + away, Ns(to)),
                                         std::memory_order_relaxed)) {
  }
}

void StallWatch::Run() {
  std::unique_lock lock(mu_);
  Clock::time_point checked = Clock::now();
  while (!cv_.wait_for(lock, kCheckInterval, [&] { return stopping_; })) {
    const Clock::time_point now = Clock::now();
    // Woken this late, the launcher itself was stopped (or starved): not the job's silence.
    if (now - checked >= kNotWatchedAfter) NotWatched(checked + kCheckInterval, now);
    checked = now;
    if (auto silent = Check(now)) {
      lock.unlock();
      on_stall_(*silent);  // once
      return;
    }
  }
}

}  // namespace podrun
