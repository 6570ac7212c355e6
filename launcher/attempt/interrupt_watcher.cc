// See interrupt_watcher.h.
#include "launcher/attempt/interrupt_watcher.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <cerrno>
#include <chrono>

#include "proto/interrupt_note.h"

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
  SetInterruptsNoted(true);
  thread_ = std::thread([this] {
    const sigset_t set = InterruptSet();
    timespec poll{0, std::chrono::nanoseconds(kStopPoll).count()};
    while (!done_) {
      if (::sigtimedwait(&set, nullptr, &poll) == SIGINT) {
        NoteInterrupt();  // first: a wait on a child ends while on_interrupt runs
        on_interrupt_();
      }
    }
  });
}

InterruptWatcher::~InterruptWatcher() { Stop(); }

void InterruptWatcher::Stop() {
  done_ = true;
  if (thread_.joinable()) {
    thread_.join();
    SetInterruptsNoted(false);
  }
}

bool SleepUnlessInterrupted(std::chrono::milliseconds wait) {
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  sigset_t old;
  ::pthread_sigmask(SIG_BLOCK, &interrupt, &old);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  bool interrupted = false;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto left = deadline - std::chrono::steady_clock::now();
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
    timespec ts{static_cast<time_t>(secs.count()),
                static_cast<long>(std::chrono::nanoseconds(left - secs).count())};
    const int sig = ::sigtimedwait(&interrupt, nullptr, &ts);
    if (sig == SIGINT) {
      NoteInterrupt();
      interrupted = true;
      break;
    }
    if (sig < 0 && errno != EINTR && errno != EAGAIN) break;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return !interrupted;
}

}  // namespace podrun
