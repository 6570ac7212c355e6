// GangDriver: the attempt's gang from the barrier to the report: records which workers are
// prepared and started (Gang), follows every worker's log into the merged output, and reacts to
// a worker's end, its loss, a stall or Ctrl-C by stopping the others (on stopper threads,
// retried, else recorded as pending); then reports the outcome and the root cause.
// Thread-safe: the followers, the stall watch and the interrupt watcher call it concurrently.
// Its lock guards the gang's state alone: no RPC and no job-store write is made while it is
// held (what they need is copied under it), so a slow store or agent never holds up a Ctrl-C.
// Every stopper is joined, at JoinStoppers or at the latest by the destructor.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/gang.h"
#include "launcher/attempt/stall_watch.h"
#include "launcher/attempt/stopper_threads.h"
#include "launcher/base/error.h"
#include "launcher/insight/progress_watch.h"
#include "launcher/output/attempt_output.h"

namespace podrun {

class GangDriver {
 public:
  GangDriver(const AttemptPlan& plan, AttemptRecorder& recorder, AttemptWorkers& workers)
      : plan_(plan),
        recorder_(recorder),
        workers_(workers),
        gang_(plan.pod.selected, plan.spec.on_failure) {}
  // Ends the stall watch, then joins every stopper (an attempt that threw joins them here).
  ~GangDriver();
  GangDriver(const GangDriver&) = delete;
  GangDriver& operator=(const GangDriver&) = delete;

  // Opens the merged log (the launcher's copies under $PODRUN_HOME/jobs/<id>/<attempt>/).
  void OpenLog();

  // The barrier: records each worker as prepared or failed (said, and stored). Gives GO and
  // returns true when every worker is ready; else calls `not_ready(outcome, interrupted)` and
  // returns false (the gang is aborted then: no stop can follow).
  bool Barrier(const std::function<void(ExitCode outcome, bool interrupted)>& not_ready);
  // The start instant has been given (the stall watch and the report count from it).
  void MarkStarted() { started_ = std::chrono::steady_clock::now(); }
  // After StartAll: records each worker started or failed; a failed start stops the gang.
  void RecordStarts();
  // For an attempt started before this driver (FollowAttempt; after OpenLog): every worker
  // counts as started at `started_ns` (wall clock), and its log is resumed where the launcher's
  // copy ends (AttemptOutput::Resume); the stall watch counts from now (the job's silence
  // before is not known). A worker whose first connection failed (its `error`) is followed all
  // the same: reconnected as a followed worker whose connection broke, lost after the same 20 s.
  // Returns the workers to follow.
  std::vector<AttemptWorker*> Resume(int64_t started_ns);
  // Follows `workers`' logs until every one has ended or is lost (no thread per worker).
  void FollowAll(const std::vector<AttemptWorker*>& workers);
  // Ctrl-C: stops the job on every worker (once).
  void OnInterrupt();
  // Waits for the stops under way (and those they start).
  void JoinStoppers();
  bool HasRootCause();
  // Says the outcome (root cause and its last lines, log gaps, who was stopped), records the
  // attempt's end and returns its exit code.
  ExitCode Report();

 private:
  void OnStall(std::chrono::seconds silent);  // on the stall watch's thread
  void OnEnded(AttemptWorker& w, const ProcessEnd& end, uint64_t last_seq);
  // `known_gone`: the reason already says why the worker is gone (its node's state).
  void OnLost(AttemptWorker& w, const std::string& reason, bool known_gone = false);
  // Starts a stopper for every running worker; returns those for which none could start.
  // Caller holds mutex_.
  std::vector<AttemptWorker*> StopRunning();
  // Says and records the stops StopRunning could not start. Caller does not hold mutex_.
  void RecordUnsentStops(const std::vector<AttemptWorker*>& unsent);
  void StopWorker(AttemptWorker& w);  // on a stopper thread: retried, else recorded as pending
  // Why worker `index` is gone when its TPU node is not READY (gcloud, asked at most every few
  // seconds per node); nullopt otherwise. From the followers' reconnect threads.
  std::optional<std::string> GoneNode(int index);

  const AttemptPlan& plan_;
  AttemptRecorder& recorder_;
  AttemptWorkers& workers_;
  std::mutex mutex_;
  Gang gang_;  // guarded by mutex_
  std::unique_ptr<AttemptOutput> output_;
  std::optional<StallWatch> stall_;        // stall_seconds > 0, while following
  std::optional<ProgressWatch> progress_;  // while following
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // Resume: where each worker's log resumes (absent: record 1), and when the follow began.
  std::map<int, uint64_t> resume_from_;
  std::optional<std::chrono::steady_clock::time_point> resumed_at_;
  StopperThreads stoppers_;  // last: joined before anything a stopper uses goes
};

}  // namespace podrun
