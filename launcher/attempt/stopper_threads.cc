// See stopper_threads.h.
#include "launcher/attempt/stopper_threads.h"

#include <exception>
#include <system_error>

#include "launcher/output/say.h"

namespace podrun {

StopperThreads::~StopperThreads() { JoinAll(); }

bool StopperThreads::Start(std::function<void()> stop) {
  std::lock_guard lock(mutex_);
  try {
    threads_.emplace_back([stop = std::move(stop)] {
      try {
        stop();
      } catch (const std::exception& e) {
        Say(std::string("stop: ") + e.what());
      } catch (...) {
        Say("stop: an unknown error");
      }
    });
  } catch (const std::system_error&) {
    return false;
  }
  return true;
}

void StopperThreads::JoinAll() {
  for (;;) {
    std::vector<std::jthread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    if (threads.empty()) return;
    threads.clear();  // jthread's destructor joins
  }
}

}  // namespace podrun
