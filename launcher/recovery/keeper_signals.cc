// See keeper_signals.h.
#include "launcher/recovery/keeper_signals.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/output/say.h"

namespace podrun {
namespace {

sigset_t TermSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  return set;
}

// How often the thread checks whether it should end.
constexpr auto kStopPoll = std::chrono::milliseconds(100);

}  // namespace

KeeperSignals::KeeperSignals() {
  const sigset_t set = TermSet();
  ::pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] {
    const sigset_t set = TermSet();
    timespec poll{0, std::chrono::nanoseconds(kStopPoll).count()};
    while (!done_) {
      if (::sigtimedwait(&set, nullptr, &poll) == SIGTERM) OnTerm();
    }
  });
}

KeeperSignals::~KeeperSignals() {
  done_ = true;
  if (thread_.joinable()) thread_.join();
}

void KeeperSignals::OnTerm() {
  {
    std::lock_guard lock(mutex_);
    if (stop_requested_) return;  // stopping already
    stop_requested_ = true;
    if (recovering_) {
      Say("SIGTERM (podrun stop or podrun down): giving up the recovery");
      cancel_.Cancel();
      return;
    }
  }
  // Not recovering: end now, as SIGTERM's default action would have (the stop that sent it
  // stops the workers).
  ::signal(SIGTERM, SIG_DFL);
  const sigset_t set = TermSet();
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(SIGTERM);
}

ProvisionWait KeeperSignals::wait() {
  return [this](std::chrono::milliseconds wait) {
    const auto until = std::chrono::steady_clock::now() + wait;
    for (;;) {
      if (cancel_.cancelled()) return false;
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) return true;
      const auto slice = std::min<std::chrono::milliseconds>(
          kStopPoll, std::chrono::ceil<std::chrono::milliseconds>(left));
      if (!SleepUnlessInterrupted(slice)) return false;
    }
  };
}

bool KeeperSignals::EnterRecovery() {
  std::lock_guard lock(mutex_);
  if (stop_requested_) return false;
  recovering_ = true;
  return true;
}

bool KeeperSignals::LeaveRecovery() {
  std::lock_guard lock(mutex_);
  if (stop_requested_) return false;  // stays recovering: the keeper ends by itself
  recovering_ = false;
  return true;
}

}  // namespace podrun
