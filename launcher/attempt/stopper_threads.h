// StopperThreads: the threads that stop workers (GangDriver's stoppers), joined on every path.
// A stop is an RPC retried for a while, so each runs on a thread of its own; whatever happens
// between a stop's start and its join (an exception unwinding the attempt included), the
// destructor joins it, so no thread is left running on a freed frame and none reaches
// std::terminate as a joinable std::thread would.
#pragma once

#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace podrun {

class StopperThreads {
 public:
  StopperThreads() = default;
  // Joins every thread still running (JoinAll).
  ~StopperThreads();
  StopperThreads(const StopperThreads&) = delete;
  StopperThreads& operator=(const StopperThreads&) = delete;

  // Runs `stop` on a thread of its own; an exception it throws is said (output/say.h), never
  // fatal. Returns false, running nothing, when no thread can be had. Any thread.
  bool Start(std::function<void()> stop);
  // Returns once every stop started so far has ended, those started while it waits (a stop
  // that starts another) included. Any thread but a stopper's own.
  void JoinAll();

 private:
  std::mutex mutex_;
  std::vector<std::jthread> threads_;  // guarded by mutex_
};

}  // namespace podrun
