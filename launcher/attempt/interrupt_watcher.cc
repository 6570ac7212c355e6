// See interrupt_watcher.h.
#include "launcher/attempt/interrupt_watcher.h"

#include <pthread.h>
#include <signal.h>

#include <chrono>

namespace podrun {
namespace {

// How often the watcher checks whether it should stop.
constexpr auto kStopPoll = std::chrono::milliseconds(100);

sigset_t InterruptSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

InterruptWatcher::InterruptWatcher(std::function<void()> on_interrupt)
    : on_interrupt_(std::move(on_interrupt)) {
  const sigset_t set = InterruptSet();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  thread_ = std::thread([this] {
    const sigset_t set = InterruptSet();
    timespec poll{0, std::chrono::nanoseconds(kStopPoll).count()};
    while (!done_) {
      if (::sigtimedwait(&set, nullptr, &poll) == SIGINT) on_interrupt_();
    }
  });
}

InterruptWatcher::~InterruptWatcher() { Stop(); }

void InterruptWatcher::Stop() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

}  // namespace podrun
