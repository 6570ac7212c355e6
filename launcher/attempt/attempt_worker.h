// What the parts of an attempt share (attempt_runner.cc runs them): each worker as the attempt
// sees it (AttemptWorker: its agent connection and how far it got), the set of them, and the
// attempt's record in the job store (AttemptRecorder), written from many threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/attempt/attempt_plan.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/agent_connection.h"
#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"

namespace podrun {

struct AttemptWorker {
  explicit AttemptWorker(AgentConnection& c) : connection(c), index(c.index()) {}

  AgentConnection& connection;  // owned by the attempt's AgentConnections
  const int index;
  // Why this worker dropped out before the start ("w3 (...): prepare: ..."); empty while it is
  // still in. A worker with an error takes part in no later phase.
  std::string error;
  AgentStartReply start;  // its Start's answer
  // The start's instant in this launcher's clock, and the clock offset it was sent with
  // (StartOffsets, connect/clock_sync.h): the agent's clock minus ours.
  int64_t start_at_ns = 0, start_offset_ns = 0;
  std::optional<AgentLogGap> gap;          // output the worker could not keep on its disk
  std::atomic<int64_t> last_output_ns{0};  // steady clock, of its last output (0: none)

  const std::string& description() const { return connection.description(); }
  std::shared_ptr<AgentClient> client() const { return connection.client(); }
  // Connects to the agent anew and greets it (measuring its clock if that was never done:
  // a worker first reached by a reconnect); throws.
  std::shared_ptr<AgentClient> Reconnect() {
    return connection.Connect(connection.clock_measured()
                                  ? AgentConnection::Greeting::kHello
                                  : AgentConnection::Greeting::kMeasureClock);
  }
};

// The attempt's workers, in the pod's selected order, and by pod-wide index.
class AttemptWorkers {
 public:
  explicit AttemptWorkers(AgentConnections& connections) {
    for (auto& c : connections.all()) {
      all_.push_back(std::make_unique<AttemptWorker>(*c));
      by_index_[c->index()] = all_.back().get();
    }
  }

  std::vector<std::unique_ptr<AttemptWorker>>& all() { return all_; }
  const std::vector<std::unique_ptr<AttemptWorker>>& all() const { return all_; }
  size_t size() const { return all_.size(); }
  // Throws std::out_of_range for an index not in the attempt.
  AttemptWorker& at(int index) const { return *by_index_.at(index); }
  // Null for an index not in the attempt.
  const AttemptWorker* Find(int index) const {
    auto it = by_index_.find(index);
    return it == by_index_.end() ? nullptr : it->second;
  }
  // True while no worker has an error.
  bool AllIn() const {
    for (const auto& w : all_) {
      if (!w->error.empty()) return false;
    }
    return true;
  }
  // Runs f(worker) for every worker, on a thread each (as many as can be had); waits for all.
  template <class F>
  void ForEach(F f) {
    ParallelFor(all_.size(), [&](size_t i) { f(*all_[i]); });
  }

 private:
  std::vector<std::unique_ptr<AttemptWorker>> all_;
  std::map<int, AttemptWorker*> by_index_;
};

// The attempt's record in the job store. Thread-safe; a store error is said as a warning (the
// job goes on without its record rather than stopping).
class AttemptRecorder {
 public:
  AttemptRecorder(JobStore& store, const AttemptPlan& plan) : store_(store), plan_(plan) {}

  void UpdateWorker(int index, const WorkerUpdate& update);
  // The attempt's state; with `ended`, its end time is now.
  void SetAttempt(AttemptState state, std::optional<int> exit_code = std::nullopt,
                  bool ended = false);
  void SetJobHosts(const std::vector<JobHost>& hosts);
  // The root cause that ended the attempt, as the report says it.
  void SetCause(AttemptEnd end, const std::string& cause);
  // The workers' progress and new step samples (insight/step_tracker.h).
  void SaveProgress(const std::vector<WorkerProgress>& progress,
                    const std::vector<StepSamplesUpdate>& samples);
  // The hang report made when the stall watch fired, kept with the attempt.
  void SetHangReport(const HangReportRecord& report);
  // Records these phases of the attempt's workers, in one transaction (attempt/phase_times.h).
  void SetPhases(const std::vector<PhaseRecord>& phases);

 private:
  // Runs `write` on the store under the lock; a store error is said as a warning (the attempt
  // goes on: its record is not worth stopping a job for).
  template <typename Write>
  void Guarded(const Write& write);

  JobStore& store_;
  const AttemptPlan& plan_;
  std::mutex mutex_;
};

// Seconds elapsed on the steady clock since `start`.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace podrun
