// Whole-gang restarts (see restarts.h).
#include "launcher/attempt/restarts.h"

#include <fmt/format.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "launcher/attempt/preemption.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

constexpr auto kFirstBackoff = std::chrono::seconds(5);
constexpr auto kMaxBackoff = std::chrono::minutes(5);

// Waits `wait`; false if Ctrl-C came first. SIGINT is blocked in this thread during an attempt
// (attempt_runner.h), so it is taken here with sigtimedwait.
bool WaitUnlessInterrupted(std::chrono::seconds wait) {
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
      interrupted = true;
      break;
    }
    if (sig < 0 && errno != EINTR && errno != EAGAIN) break;
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return !interrupted;
}

}  // namespace

std::chrono::seconds RestartBackoff(int restart) {
  auto wait = kFirstBackoff;
  for (int i = 1; i < restart && wait < kMaxBackoff; ++i) wait *= 2;
  return std::min<std::chrono::seconds>(wait, kMaxBackoff);
}

ExitCode RunAttemptsWithRestarts(JobStore& store, AttemptPlan plan) {
  ExitCode code = RunAttempt(store, plan);
  for (int restart = 1; restart <= plan.spec.restarts && !plan.detach; ++restart) {
    const auto attempt = store.LatestAttempt(plan.job.id);
    if (code != ExitCode::kFailed || !attempt || attempt->state != AttemptState::kFailed) break;
    const auto wait = RestartBackoff(restart);
    Say(
        fmt::format("restarting the whole gang in {} s (restart {} of {}; Ctrl-C "
                    "to give up)",
                    wait.count(), restart, plan.spec.restarts));
    if (!WaitUnlessInterrupted(wait)) {
      Say("interrupted: no restart");
      return ExitCode::kInterrupted;
    }
    // A preempted node is waited for, and the gang restarts at its new addresses.
    std::optional<std::vector<int>> moved;
    try {
      moved = WaitForReadyNodes(plan.pod, plan.home / "cache", ReadyPollInterval(),
                                WaitUnlessInterrupted);
    } catch (const Error& e) {
      Say(e.what());
      return e.code();
    }
    if (!moved) {
      Say("interrupted: no restart");
      return ExitCode::kInterrupted;
    }
    if (!moved->empty()) store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
    plan.attempt = store.AddAttempt(plan.job.id, plan.pod.selected);
    Say(fmt::format("attempt {} of job {}", plan.attempt, plan.job.id));
    code = RunAttempt(store, plan);
  }
  return code;
}

}  // namespace podrun
