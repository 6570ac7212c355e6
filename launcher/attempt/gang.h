// Gang: one attempt's workers as a unit (docs/design.md decisions 6 and 7). Before GO, a barrier:
// GO only when every worker is prepared, and a failure before GO starts nothing anywhere.
// After GO, under stop_all, the first worker whose process fails or whose agent is lost is the
// root cause and every other worker is stopped. Pure state: the driver feeds events and acts
// on the answers. Not thread-safe: the driver holds a lock around every call.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/spec/spec.h"
#include "launcher/store/worker_state.h"

namespace podrun {

enum class GangPhase {
  kPreparing,  // connecting, bootstrapping, preparing: nothing runs yet
  kAborted,    // a worker failed before GO: nothing was started
  kRunning,    // GO was given
  kStopping,   // a failure or Ctrl-C: the others are being stopped
  kDone,       // every worker's process has ended
};

// The worker whose failure decided the attempt, and why ("exit code 3", "lost: ...").
struct RootCause {
  static constexpr int kWholeGang = -1;
  int worker = 0;  // kWholeGang: the job as a whole (a hang)
  std::string reason;
};

class Gang {
 public:
  Gang(std::vector<int> workers, OnFailure policy);

  // --- before GO
  void Prepared(int worker);
  // Aborts the gang: GO will never be given.
  void PrepareFailed(int worker, const std::string& reason);
  // Every worker prepared and none failed.
  bool ReadyForGo() const;
  // The barrier opens; throws std::logic_error unless ReadyForGo().
  void Go();

  // --- after GO. Each returns true when the caller must now stop the other workers
  // (true once at most: the first failure under stop_all, or an interrupt).
  // True when the gang was already stopping (a Ctrl-C or a failure came between GO and this
  // worker's answer): the caller stops this worker too.
  bool Started(int worker);
  bool StartFailed(int worker, const std::string& reason);
  bool Ended(int worker, bool failed, const std::string& reason, bool stopped_by_request);
  bool Lost(int worker, const std::string& reason);
  // The whole job printed nothing for stall_seconds: a failure with no single worker as its
  // cause (RootCause::worker is kWholeGang); every running worker is stopped, whatever the
  // on_failure policy.
  bool Hung(const std::string& reason);
  bool Interrupt();

  GangPhase phase() const { return phase_; }
  WorkerState state(int worker) const { return states_.at(worker); }
  const std::vector<int>& workers() const { return workers_; }
  // Workers whose process may still run (started and not ended).
  std::vector<int> Running() const;
  // Workers stopped by podrun (apart from the root cause).
  std::vector<int> StoppedByUs() const;
  bool interrupted() const { return interrupted_; }
  const std::optional<RootCause>& root_cause() const { return root_cause_; }
  // The attempt's exit code: 0, 1 (a failure), 3 (aborted before GO), 130 (interrupted).
  ExitCode Outcome() const;

 private:
  bool Fail(int worker, const std::string& reason);
  void CheckDone();

  std::vector<int> workers_;
  OnFailure policy_;
  GangPhase phase_ = GangPhase::kPreparing;
  std::map<int, WorkerState> states_;
  std::map<int, bool> prepared_;
  std::map<int, bool> stopped_by_us_;
  std::optional<RootCause> root_cause_;
  bool any_failed_ = false;
  bool interrupted_ = false;
};

}  // namespace podrun
