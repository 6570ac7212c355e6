// The stall watch (see stall_watch.h).
#include "launcher/attempt/stall_watch.h"

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

void StallWatch::Run() {
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, kCheckInterval, [&] { return stopping_; })) {
    if (auto silent = Check(Clock::now())) {
      lock.unlock();
      on_stall_(*silent);  // once
      return;
    }
  }
}

}  // namespace podrun
