// The runner of one attempt, in parts (attempt_runner.h is the interface): this header is
// internal to attempt_runner.cc (the whole run), attempt_phases.cc (connect,
// setup, prepare, start) and attempt_gang.cc (following the logs, failures, stops).
#pragma once

#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "launcher/agent/agent_binary.h"
#include "launcher/agent/agent_client.h"
#include "launcher/agent/agent_link.h"
#include "launcher/job/attempt_runner.h"
#include "launcher/job/clock_sync.h"
#include "launcher/job/gang.h"
#include "launcher/job/interrupt_watcher.h"
#include "launcher/job/job_agents.h"
#include "launcher/job/job_env.h"
#include "launcher/job/job_pod.h"
#include "launcher/job/log_follower.h"
#include "launcher/job/parallel_for.h"
#include "launcher/job/run_request.h"
#include "launcher/job/setup_phase.h"
#include "launcher/job/stall_watch.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/live_progress.h"
#include "launcher/output/log_merger.h"
#include "launcher/pod/worker_range.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/fan_out.h"
#include "launcher/sync/manifest.h"

namespace podrun::attempt_internal {

using Clock = std::chrono::steady_clock;
// A worker whose agent gives no progress for this long is lost (LogFollowParams).
constexpr auto kLostAfter = std::chrono::seconds(20);
constexpr auto kReconnectPause = std::chrono::milliseconds(500);
// A stop that cannot be delivered is retried (reconnecting) for this long, then recorded as
// pending in the job store for the next command that reaches the worker.
constexpr auto kStopRetryFor = std::chrono::seconds(20);
constexpr int kClockProbes = 3;
// How far ahead the lockstep start is scheduled: enough for every Start to arrive first.
constexpr auto kMinStartLead = std::chrono::milliseconds(25);

// A progress line on stderr (in place of the live line, if one is drawn: LiveProgress).
inline void Say(const std::string& message) {
  WriteAll(STDERR_FILENO, LiveProgress::ClearPrefix() + "podrun: " + message + "\n");
}

inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline bool EndFailed(const AgentProcessEnd& end) { return !end.exit_code || *end.exit_code != 0; }

// Runs f(worker) for every worker, on a thread each (as many as can be had), and waits for all.
template <class Items, class F>
void ForEachParallel(Items& items, F f) {
  ParallelFor(items.size(), [&](size_t i) { f(*items[i]); });
}

class Runner {
 public:
  Runner(JobStore& store, const AttemptPlan& plan)
      : store_(store), plan_(plan), gang_(plan.pod.selected, plan.spec.on_failure) {}
  // Lets go of the jump host sessions on the loop (they end with the last link using them).
  ~Runner();

  ExitCode Run();

 private:
  struct Worker {
    int index = 0;
    std::unique_ptr<AgentLink> link;
    std::mutex connect_mutex;  // one Connect() at a time (follower and stopper may both try)
    std::mutex client_mutex;
    std::shared_ptr<AgentClient> client;
    std::string error;
    AgentStartReply start;
    int64_t clock_offset_ns = 0;             // agent wall clock minus ours
    int64_t rtt_ns = 0;                      // of the Hello that measured the offset
    std::optional<AgentLogGap> gap;          // output the worker could not keep on its disk
    AgentHello hello;                        // the agent's answer when it was connected
    std::atomic<int64_t> last_output_ns{0};  // steady clock, of its last output (0: none)
  };

  std::shared_ptr<AgentClient> Client(Worker& w) {
    std::lock_guard lock(w.client_mutex);
    return w.client;
  }
  // Connects to the worker's agent anew and greets it; throws.
  std::shared_ptr<AgentClient> Reconnect(Worker& w) {
    std::lock_guard connect(w.connect_mutex);
    auto client = std::make_shared<AgentClient>(w.link->Connect());
    client->Hello();
    std::lock_guard lock(w.client_mutex);
    w.client = client;
    return client;
  }
  void UpdateWorker(int index, const WorkerUpdate& update) {
    std::lock_guard lock(store_mutex_);
    try {
      store_.UpdateWorker(plan_.job.id, plan_.attempt, index, update);
    } catch (const Error& e) {
      Say(fmt::format("warning: job store: {}", e.what()));
    }
  }
  void SetAttempt(AttemptState state, std::optional<int> exit_code = std::nullopt,
                  bool ended = false) {
    std::lock_guard lock(store_mutex_);
    try {
      store_.SetAttemptState(plan_.job.id, plan_.attempt, state, exit_code,
                             ended ? std::optional<int64_t>(NowUnixNs()) : std::nullopt);
    } catch (const Error& e) {
      Say(fmt::format("warning: job store: {}", e.what()));
    }
  }

  void ConnectAll();
  // On Cloud TPU VMs given by --hosts: refuses an order of hosts that contradicts the VMs' TPU
  // worker numbers (exit 2, naming which host is which worker). True if the ranks may stand.
  bool CheckTpuWorkerNumbers();
  // The addresses the workers reach each other at, rank order (PODRUN_WORKER_HOSTS).
  std::vector<std::string> WorkerAddresses() const;
  // The manifest of the spec's sync (before anything is started); false (said why) on error.
  bool BuildSyncManifest();
  void SyncAll();   // the spec's sync to every connected worker; failures set Worker::error
  void MountAll();  // the spec's mounts on every connected worker; failures set Worker::error
  void SetupAll();  // the spec's setup on every connected worker; failures set Worker::error
  void PrepareAll();
  void StartAll();
  void FollowAll(const std::vector<Worker*>& workers);  // until every log is done
  void OnStall(std::chrono::seconds silent);            // on the stall watch's thread
  void OnEnded(Worker& w, const AgentProcessEnd& end, uint64_t last_seq);
  void OnLost(Worker& w, const std::string& reason);
  void StopRunning();          // caller holds gang_mutex_
  void StopWorker(Worker& w);  // on a stopper thread: retried, else recorded as pending
  void ReleasePrepared();      // after a failed barrier
  void OnInterrupt();          // on the interrupt watcher's thread
  void JoinStoppers();
  ExitCode Report();

  JobStore& store_;
  const AttemptPlan& plan_;
  std::mutex store_mutex_;
  // Declared before the workers: their links use the loop until they are destroyed.
  std::optional<AgentBinary> agent_;
  std::optional<EventLoop> loop_;
  std::optional<AgentRelay> relay_;  // on the loop: the agent binary lent between workers
  std::optional<FanOutWindow> window_;
  std::optional<JumpHosts> jumps_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<int, Worker*> by_index_;

  std::mutex gang_mutex_;
  Gang gang_;
  std::vector<std::thread> stoppers_;  // guarded by gang_mutex_

  std::unique_ptr<LogMerger> merger_;
  // The live line of the phases before the start (on a terminal); ended before job output.
  std::optional<LiveProgress> progress_;
  // Marks `w` through the current phase of the live line.
  void Progressed(int worker) {
    if (progress_) progress_->Done(worker);
  }
  // Starts a phase of the live line over the workers without an error.
  void BeginProgress(const std::string& phase) {
    if (!progress_) return;
    std::vector<int> indexes;
    for (auto& w : workers_) {
      if (w->error.empty()) indexes.push_back(w->index);
    }
    progress_->BeginPhase(phase, indexes);
  }
  std::optional<Manifest> manifest_;  // of the spec's sync, if it has one
  bool tpu_vms_ = false;              // the agents run on Cloud TPU VMs (their metadata says so)
  std::optional<StallWatch> stall_;   // stall_seconds > 0, while following
  Clock::time_point started_ = Clock::now();
  std::chrono::nanoseconds prepare_fan_out_{0};  // how long Prepare to every worker took
};

}  // namespace podrun::attempt_internal
