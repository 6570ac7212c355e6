// One attempt of a job across the gang (docs/design.md, "The job, as data flowing through the
// system"): the run from the first connection to the report. Its parts: the workers'
// connections (connect/agent_connection.h), the phases before the start (PhaseFanOut) and the
// gang while it runs (GangDriver).
#include "launcher/attempt/attempt_runner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>

#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/gang_driver.h"
#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/attempt/phase_fan_out.h"
#include "launcher/connect/agent_connection.h"
#include "launcher/output/say.h"

namespace podrun {
namespace {

// Says how the agents were reached: installed where (uploaded or from peers), tunnels through
// dial-stdio.
std::string DescribeAgents(AgentConnections& connections, double seconds) {
  const size_t n = connections.all().size();
  int uploads = 0, from_peers = 0, dial_stdio = 0;
  for (auto& c : connections.all()) {
    uploads += c->link().uploaded_agent() ? 1 : 0;
    from_peers += c->link().relayed_agent() ? 1 : 0;
    dial_stdio += c->link().uses_dial_stdio() ? 1 : 0;
  }
  const int failed_fetches = connections.relay() ? connections.relay()->failed_fetches() : 0;
  return fmt::format(
      "agents ready on {} workers in {:.2f} s{}{}", n, seconds,
      uploads + from_peers
          ? fmt::format(" (agent installed on {}: uploaded to {}, from peers to {}{})",
                        uploads + from_peers, uploads, from_peers,
                        failed_fetches
                            ? fmt::format("; {} could not fetch it from a peer", failed_fetches)
                            : "")
          : "",
      dial_stdio ? fmt::format(" (stream-local forwarding refused: tunnel through "
                               "dial-stdio on {})",
                               dial_stdio)
                 : "");
}

// Ctrl-C during the attempt: the watcher takes it from before any other thread starts (the
// event loop's included); it reaches the gang once the gang exists, at once if it came earlier.
class AttemptInterrupts {
 public:
  AttemptInterrupts() : watcher_([this] { Interrupted(); }) {}
  // From now on Ctrl-C goes to `gang` (null: nowhere, from before the gang is gone).
  void HandTo(GangDriver* gang) {
    std::lock_guard lock(mutex_);
    gang_ = gang;
    if (gang_ && pending_) gang_->OnInterrupt();
  }
  // Stops taking Ctrl-C (SIGINT is unblocked again).
  void Stop() { watcher_.Stop(); }

 private:
  void Interrupted() {
    std::lock_guard lock(mutex_);
    if (gang_) {
      gang_->OnInterrupt();
    } else {
      pending_ = true;
    }
  }

  std::mutex mutex_;
  GangDriver* gang_ = nullptr;  // guarded by mutex_
  bool pending_ = false;        // guarded by mutex_
  InterruptWatcher watcher_;    // last: stopped before the rest goes
};

// Ctrl-C goes to `gang` while this lives.
class GangInterrupts {
 public:
  GangInterrupts(AttemptInterrupts& interrupts, GangDriver& gang) : interrupts_(interrupts) {
    interrupts_.HandTo(&gang);
  }
  ~GangInterrupts() { interrupts_.HandTo(nullptr); }
  GangInterrupts(const GangInterrupts&) = delete;
  GangInterrupts& operator=(const GangInterrupts&) = delete;

 private:
  AttemptInterrupts& interrupts_;
};

ExitCode RunWith(const AttemptPlan& plan, AttemptRecorder& recorder, AgentConnections& connections,
                 AttemptInterrupts& interrupts) {
  AttemptWorkers workers(connections);
  PhaseFanOut phases(plan, recorder, workers);
  GangDriver gang(plan, recorder, workers);
  // Once the watcher has stopped, only the followers' ends (joined before) could add stoppers.
  GangInterrupts handed(interrupts, gang);

  if (!phases.BuildSyncManifest()) {
    recorder.SetAttempt(AttemptState::kStartFailed, static_cast<int>(ExitCode::kUsage), true);
    return ExitCode::kUsage;
  }
  gang.OpenLog();
  const size_t n = workers.size();
  Say(fmt::format("connecting to {} worker{} ({})", n, n == 1 ? "" : "s", plan.pod.description));
  const auto began = std::chrono::steady_clock::now();
  phases.StartProgress();
  phases.ConnectAll();
  connections.EndAgentRelay();  // every worker has its agent, or never will: lenders stop here
  if (workers.AllIn()) {
    Say(DescribeAgents(connections, SecondsSince(began)));
    if (!phases.CheckTpuWorkerNumbers()) {
      phases.ReleasePrepared();
      recorder.SetAttempt(AttemptState::kStartFailed, static_cast<int>(ExitCode::kUsage), true);
      return ExitCode::kUsage;
    }
    phases.SyncAll();
    if (workers.AllIn()) phases.MountAll();
    if (workers.AllIn()) {
      if (!plan.spec.setup.empty()) phases.EndProgress();  // setup's output comes next
      phases.SetupAll();
    }
    if (workers.AllIn()) phases.PrepareAll();
  }
  std::optional<ExitCode> not_started;
  const bool go = gang.Barrier([&](ExitCode outcome, bool interrupted) {
    phases.EndProgress();  // the report comes next
    if (!interrupted) {
      Say(
          fmt::format("job {} did not start: {} of {} workers could not be prepared; nothing "
                      "was started anywhere",
                      plan.job.id,
                      std::count_if(workers.all().begin(), workers.all().end(),
                                    [](auto& w) { return !w->error.empty(); }),
                      n));
    } else {
      Say("interrupted before the start: nothing was started anywhere");
    }
    recorder.SetAttempt(AttemptState::kStartFailed, static_cast<int>(outcome), true);
    phases.ReleasePrepared();
    not_started = outcome;
  });
  if (!go) return *not_started;
  gang.MarkStarted();
  phases.StartAll();
  gang.RecordStarts();
  phases.EndProgress();  // the job's output comes next
  int64_t first = INT64_MAX, last = 0, late_ns = 0;
  int late = 0;
  for (auto& w : workers.all()) {
    if (!w->error.empty()) continue;
    // In the launcher's clock, so that workers with different clocks compare.
    const int64_t start_ns = w->start.start_time_ns - w->start_offset_ns;
    first = std::min(first, start_ns);
    last = std::max(last, start_ns);
    // A Start that reached its agent after the instant started on arrival (an older agent
    // says nothing: received_ns 0).
    const int64_t after = w->start.received_ns - w->start_offset_ns - w->start_at_ns;
    if (w->start.received_ns > 0 && !w->start.already_started && after > 0) {
      ++late;
      late_ns = std::max(late_ns, after);
    }
  }
  if (last > 0) {
    Say(fmt::format("started on {} workers (start skew {:.1f} ms){}", n,
                    static_cast<double>(last - first) / 1e6,
                    late == 0 ? std::string()
                              : fmt::format("; the start reached {} of them after its instant, "
                                            "up to {:.1f} ms late: they started on arrival",
                                            late, static_cast<double>(late_ns) / 1e6)));
  }
  recorder.SetAttempt(AttemptState::kRunning);
  if (plan.detach) {
    interrupts.Stop();
    gang.JoinStoppers();
    if (gang.HasRootCause()) return gang.Report();
    Say(fmt::format("job {} runs detached; follow it with: podrun logs {} -f", plan.job.id,
                    plan.job.id));
    return ExitCode::kOk;
  }
  std::vector<AttemptWorker*> following;
  for (auto& w : workers.all()) {
    if (w->error.empty()) following.push_back(w.get());
  }
  // No thread per worker: the streams run on gRPC's threads (see FollowLogs).
  gang.FollowAll(following);
  interrupts.Stop();
  gang.JoinStoppers();
  return gang.Report();
}

ExitCode FollowWith(const AttemptPlan& plan, AttemptRecorder& recorder,
                    AgentConnections& connections, AttemptInterrupts& interrupts,
                    int64_t started_ns) {
  AttemptWorkers workers(connections);
  GangDriver gang(plan, recorder, workers);
  GangInterrupts handed(interrupts, gang);
  gang.OpenLog();
  Say(fmt::format("following attempt {} of job {} on {} workers ({})", plan.attempt, plan.job.id,
                  workers.size(), plan.pod.description));
  // The clocks are measured, as for a start: steps and reports compare workers' times.
  workers.ForEach([](AttemptWorker& w) {
    try {
      w.connection.Connect(AgentConnection::Greeting::kMeasureClock);
    } catch (const std::exception& e) {
      w.error = e.what();
    }
  });
  std::vector<AttemptWorker*> following = gang.Resume(started_ns);
  gang.FollowAll(following);
  interrupts.Stop();
  gang.JoinStoppers();
  return gang.Report();
}

}  // namespace

ExitCode FollowAttempt(JobStore& store, const AttemptPlan& plan) {
  AttemptInterrupts interrupts;
  AttemptRecorder recorder(store, plan);
  int64_t started_ns = store.GetAttempt(plan.job.id, plan.attempt).started_ns;
  for (const WorkerRecord& w : store.Workers(plan.job.id, plan.attempt)) {
    if (w.start_ns) started_ns = std::max(started_ns, *w.start_ns);
  }
  std::optional<AgentConnections> connections;
  try {
    connections.emplace(plan.pod, plan.home / "local", plan.pod.selected, /*relay_agent=*/false);
  } catch (const Error& e) {
    Say(e.what());
    return ExitCode::kUnreachable;
  }
  return FollowWith(plan, recorder, *connections, interrupts, started_ns);
}

ExitCode RunAttempt(JobStore& store, const AttemptPlan& plan) {
  AttemptInterrupts interrupts;
  AttemptRecorder recorder(store, plan);
  std::optional<AgentConnections> connections;
  try {
    connections.emplace(plan.pod, plan.home / "local", plan.pod.selected, /*relay_agent=*/true);
  } catch (const Error& e) {
    Say(e.what());
    recorder.SetAttempt(AttemptState::kStartFailed, 3, true);
    return ExitCode::kUnreachable;
  }
  return RunWith(plan, recorder, *connections, interrupts);
}

}  // namespace podrun
