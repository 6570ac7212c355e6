// TickerThread: calls a function at a fixed period on a thread of its own until destroyed
// (used to print progress states that became due while no output arrived).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace podrun {

class TickerThread {
 public:
  // Starts calling `tick` every `period`. Throws std::system_error if no thread can be had.
  TickerThread(std::chrono::milliseconds period, std::function<void()> tick)
      : thread_([this, period, tick = std::move(tick)](std::stop_token stop) {
          std::unique_lock lock(mutex_);
          while (!wake_.wait_for(lock, stop, period, [] { return false; })) {
            if (stop.stop_requested()) return;
            lock.unlock();
            tick();
            lock.lock();
          }
        }) {}
  // Stops and joins: no call of `tick` runs after the destructor returns.
  ~TickerThread() {
    thread_.request_stop();
    thread_.join();
  }
  TickerThread(const TickerThread&) = delete;
  TickerThread& operator=(const TickerThread&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable_any wake_;
  std::jthread thread_;  // last: started after the members it uses
};

}  // namespace podrun
