// ApiOutage: the API's bad minutes waited out (docs/reliability.md, "The API's bad minutes"). After
// a transient gcloud failure (gcloud_run.h: IsTransientGcloudFailure: a 5xx, UNAVAILABLE, a
// deadline, a failed token refresh) the same step is tried again after 1 s, doubling up to 1 min
// with jitter, for up to a limit (the create's capacity_wait) from the first failure of a run of
// them; what it waits for is said on stderr once and through `on_wait` at each try ("the TPU API
// has not answered for 3m12s (HTTP 503), trying again"). A permanent failure (permission denied,
// a bad argument, a quota) is rethrown at once, as gcloud said it.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <type_traits>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/pod_source.h"

namespace podrun {

class ApiOutage {
 public:
  // Sleeps for the given time; false when the wait was given up (as ProvisionWait).
  using Wait = std::function<bool(std::chrono::seconds)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  // `api`: "the TPU API", "the Compute Engine API"; `wait` sleeps (false: given up).
  ApiOutage(std::string api, std::chrono::seconds limit, Wait wait,
            std::function<void(const std::string&)> on_wait = {},
            Clock clock = std::chrono::steady_clock::now);

  // After `e` failed a step: returns once the backoff has passed (the caller tries again).
  // Rethrows `e` when it is not transient; throws Error(kUnreachable) naming the outage's length
  // and gcloud's words once it has lasted `limit`; Error(kInterrupted) when the wait was given up.
  void WaitAfter(const GcloudError& e);
  // The API answered: the next failure begins a new outage (said again, backoff from 1 s).
  void Over();
  // Whether a failure is being waited out now.
  bool ongoing() const { return ongoing_; }

  // Runs `step` until it returns, waiting out its transient failures as WaitAfter does.
  template <class Step>
  auto Run(Step&& step) -> decltype(step()) {
    for (;;) {
      try {
        if constexpr (std::is_void_v<decltype(step())>) {
          step();
          Over();
          return;
        } else {
          auto result = step();
          Over();
          return result;
        }
      } catch (const GcloudError& e) {
        WaitAfter(e);
      }
    }
  }

 private:
  const std::string api_;
  const std::chrono::seconds limit_;
  const Wait wait_;
  const std::function<void(const std::string&)> on_wait_;
  const Clock clock_;
  bool ongoing_ = false;
  std::chrono::steady_clock::time_point since_{};
  std::chrono::milliseconds backoff_{0};
  unsigned jitter_state_;
};

// "the TPU API" or "the Compute Engine API": the API a source of `kind` is asked through.
const char* ApiNameOf(PodSourceKind kind);

// The backoff before try `n` (1, 2, ...) of a run of transient failures, before jitter: 1 s,
// doubling, at most 1 min.
std::chrono::milliseconds ApiOutageBackoff(int n);

}  // namespace podrun
