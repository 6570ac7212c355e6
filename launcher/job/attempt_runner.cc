// One attempt of a job across the gang (DESIGN.md: the job, as data flowing through the system).
#include "launcher/job/attempt_runner.h"

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
#include <thread>
#include <vector>

#include "launcher/agent/agent_binary.h"
#include "launcher/agent/agent_client.h"
#include "launcher/agent/agent_link.h"
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
#include "launcher/output/log_merger.h"
#include "launcher/pod/worker_range.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/fan_out.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
// A worker whose agent gives no progress for this long is lost (LogFollowParams).
constexpr auto kLostAfter = std::chrono::seconds(20);
constexpr auto kReconnectPause = std::chrono::milliseconds(500);
// A stop that cannot be delivered is retried (reconnecting) for this long, then recorded as
// pending in the job store for the next command that reaches the worker.
constexpr auto kStopRetryFor = std::chrono::seconds(20);
constexpr int kClockProbes = 3;
// How far ahead the lockstep start is scheduled: enough for every Start to arrive first.
constexpr auto kMinStartLead = std::chrono::milliseconds(50);

void Say(const std::string& message) { WriteAll(STDERR_FILENO, "podrun: " + message + "\n"); }

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool EndFailed(const AgentProcessEnd& end) { return !end.exit_code || *end.exit_code != 0; }

// Runs f(worker) for every worker, on a thread each (as many as can be had), and waits for all.
template <class Items, class F>
void ForEachParallel(Items& items, F f) {
  ParallelFor(items.size(), [&](size_t i) { f(*items[i]); });
}

class Runner {
 public:
  Runner(JobStore& store, const AttemptPlan& plan)
      : store_(store), plan_(plan), gang_(plan.pod.selected, plan.spec.on_failure) {}

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
  void SetupAll();  // the spec's setup on every connected worker; failures set Worker::error
  void PrepareAll();
  void StartAll();
  void FollowAll(const std::vector<Worker*>& workers);
  void OnStall(
      std::chrono::seconds silent);  // on the stall watch's thread  // until every log is done
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
  std::optional<FanOutWindow> window_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::map<int, Worker*> by_index_;

  std::mutex gang_mutex_;
  Gang gang_;
  std::vector<std::thread> stoppers_;  // guarded by gang_mutex_

  std::unique_ptr<LogMerger> merger_;
  bool tpu_vms_ = false;             // the agents run on Cloud TPU VMs (their metadata says so)
  std::optional<StallWatch> stall_;  // stall_seconds > 0, while following
  Clock::time_point started_ = Clock::now();
  std::chrono::nanoseconds prepare_fan_out_{0};  // how long Prepare to every worker took
};

void Runner::OnInterrupt() {
  std::lock_guard lock(gang_mutex_);
  if (gang_.interrupted()) return;
  Say("interrupted: stopping the job on every worker (Ctrl-C again has no further effect)");
  if (gang_.Interrupt()) StopRunning();
}

void Runner::JoinStoppers() {
  std::vector<std::thread> stoppers;
  {
    std::lock_guard lock(gang_mutex_);
    stoppers.swap(stoppers_);
  }
  for (auto& t : stoppers) t.join();
}

void Runner::ConnectAll() {
  ForEachParallel(workers_, [&](Worker& w) {
    UpdateWorker(w.index, {.state = WorkerState::kConnecting});
    try {
      auto channel = w.link->Connect();
      auto client = std::make_shared<AgentClient>(channel);
      // The agent's clock offset, from the quickest of a few Hellos (NTP style), so that the
      // start can be scheduled at one instant on every worker.
      const ClockOffset offset = MeasureClockOffset(*client, kClockProbes, &w.hello);
      w.clock_offset_ns = offset.offset_ns;
      w.rtt_ns = offset.rtt_ns;
      std::lock_guard lock(w.client_mutex);
      w.client = client;
    } catch (const std::exception& e) {
      w.error = e.what();
    }
  });
}

std::vector<std::string> Runner::WorkerAddresses() const {
  std::vector<std::string> addresses;
  for (const PodWorker& pw : plan_.pod.workers) {
    auto it = by_index_.find(pw.index);
    if (!pw.peer_address.empty()) {  // a discovered TPU VM: its internal IP
      addresses.push_back(pw.peer_address);
      continue;
    }
    addresses.push_back(it != by_index_.end() && it->second->error.empty()
                            ? it->second->link->peer_address()
                            : pw.host.host);
  }
  return addresses;
}

bool Runner::CheckTpuWorkerNumbers() {
  if (plan_.pod.cloud_tpu) return true;  // discovered: the ranks are the VMs' own numbers
  std::vector<std::string> wrong;
  bool any_tpu = false;
  for (auto& w : workers_) {
    if (!w->hello.tpu_worker_number) continue;
    any_tpu = true;
    if (*w->hello.tpu_worker_number != w->index) {
      wrong.push_back(
          fmt::format("{} is TPU worker {}", w->link->description(), *w->hello.tpu_worker_number));
    }
  }
  if (!wrong.empty()) {
    std::string message = fmt::format(
        "job {} did not start: the order of --hosts contradicts the TPU runtime's worker "
        "numbers (rank K must be TPU worker K): ",
        plan_.job.id);
    for (size_t i = 0; i < wrong.size(); ++i) message += (i ? "; " : "") + wrong[i];
    Say(message + ". List the hosts in TPU worker order, or use --tpu NAME --zone ZONE");
    return false;
  }
  tpu_vms_ = any_tpu;
  return true;
}

void Runner::SetupAll() {
  if (plan_.spec.setup.empty()) return;
  const std::vector<std::string> addresses = WorkerAddresses();
  std::vector<SetupWorker> setup;
  for (auto& w : workers_) {
    if (!w->error.empty()) continue;
    Worker* worker = w.get();
    SetupWorker s;
    s.index = w->index;
    s.description = w->link->description();
    s.client = Client(*w);
    try {
      s.request = MakeRunRequest(plan_, w->index, addresses, tpu_vms_);
    } catch (const std::exception& e) {
      w->error = fmt::format("{}: setup: {}", s.description, e.what());
      continue;
    }
    s.hooks = {[this, worker] { return Client(*worker); },
               [this, worker] { return Reconnect(*worker); }, Say};
    setup.push_back(std::move(s));
  }
  const auto began = Clock::now();
  Say(fmt::format("setup on {} worker{}{}", setup.size(), setup.size() == 1 ? "" : "s",
                  plan_.force_setup ? " (--force-setup)" : ""));
  LogMerger merger(plan_.home / "jobs" / plan_.job.id / std::to_string(plan_.attempt) / "setup",
                   LabelledOutput::ShouldColor(STDOUT_FILENO));
  std::vector<int> cached, ran;
  for (const SetupResult& r :
       RunSetup(plan_.spec, plan_.setup_stamp, plan_.force_setup, setup, merger)) {
    Worker& w = *by_index_.at(r.index);
    if (!r.error.empty()) {
      w.error = r.error;
      for (const std::string& line : merger.LastLines(r.index)) {
        w.error += "\n  | " + line;
      }
    } else {
      (r.cached ? cached : ran).push_back(r.index);
    }
  }
  Say(DescribeSetup(setup.size(), ran, cached, SecondsSince(began)));
}

void Runner::PrepareAll() {
  const std::vector<std::string> addresses = WorkerAddresses();
  {
    std::lock_guard lock(store_mutex_);
    try {
      store_.SetJobHosts(plan_.job.id, JobHostsOf(plan_.pod, addresses));
    } catch (const Error& e) {
      Say(fmt::format("warning: job store: {}", e.what()));
    }
  }
  const auto fan_out_began = Clock::now();
  ForEachParallel(workers_, [&](Worker& w) {
    if (!w.error.empty()) return;
    try {
      const AgentPrepareRequest request = MakeRunRequest(plan_, w.index, addresses, tpu_vms_);
      const AgentPrepareReply reply = Client(w)->Prepare(request);
      for (const std::string& action : reply.accelerator_actions) {
        Say(fmt::format("{}: freeing accelerators: {}", w.link->description(), action));
      }
      UpdateWorker(w.index, {.state = WorkerState::kSetup});
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: prepare: {}", w.link->description(), e.what());
    }
  });
  prepare_fan_out_ = Clock::now() - fan_out_began;
}

void Runner::StartAll() {
  // GO at one instant: each agent gets the same target in its own clock, far enough ahead that
  // every Start arrives before it (Start blocks until the instant: one thread per worker).
  int64_t slowest_rtt_ns = 0;
  for (auto& w : workers_) slowest_rtt_ns = std::max(slowest_rtt_ns, w->rtt_ns);
  const int64_t target_ns =
      NowUnixNs() + StartLead(kMinStartLead, slowest_rtt_ns, prepare_fan_out_).count();
  ForEachParallel(workers_, [&](Worker& w) {
    auto client = Client(w);
    try {
      w.start = client->Start(plan_.job.id, static_cast<uint32_t>(plan_.attempt),
                              target_ns + w.clock_offset_ns);
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: start: {}", w.link->description(), e.what());
    }
  });
  std::lock_guard lock(gang_mutex_);
  for (auto& w : workers_) {
    if (w->error.empty()) {
      gang_.Started(w->index);
      UpdateWorker(w->index, {.state = WorkerState::kRunning, .start_ns = w->start.start_time_ns});
    } else {
      Say(w->error);
      UpdateWorker(w->index, {.state = WorkerState::kFailed, .error = w->error});
      if (gang_.StartFailed(w->index, w->error)) StopRunning();
    }
  }
}

void Runner::ReleasePrepared() {
  // The agents hold each prepared job's process, waiting for GO: end them, GO never comes.
  ForEachParallel(workers_, [&](Worker& w) {
    auto client = Client(w);
    if (!client) return;
    try {
      client->Stop(plan_.job.id, static_cast<uint32_t>(plan_.attempt), std::chrono::seconds(0));
    } catch (const std::exception&) {
      // Unreachable: its agent ends the waiting process when it exits.
    }
  });
}

void Runner::StopRunning() {
  for (int index : gang_.Running()) {
    Worker* w = by_index_.at(index);
    try {
      stoppers_.emplace_back([this, w] { StopWorker(*w); });
    } catch (const std::system_error& e) {
      Say(fmt::format("{}: stop: no thread to send it ({})", w->link->description(), e.what()));
      UpdateWorker(index, {.stop_pending_grace = plan_.spec.grace_seconds});
    }
  }
}

void Runner::StopWorker(Worker& w) {
  const auto grace = std::chrono::seconds(plan_.spec.grace_seconds);
  const auto give_up_at = Clock::now() + kStopRetryFor;
  std::string error = "not connected";
  for (;;) {
    try {
      if (auto client = Client(w)) {
        client->Stop(plan_.job.id, static_cast<uint32_t>(plan_.attempt), grace);
        return;
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (Clock::now() >= give_up_at) break;
    std::this_thread::sleep_for(kReconnectPause);
    try {
      Reconnect(w);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  Say(fmt::format(
      "{}: the stop could not be delivered ({}); it is recorded, and the next podrun command "
      "that reaches this worker delivers it (e.g. podrun status {})",
      w.link->description(), error, plan_.job.id));
  UpdateWorker(w.index, {.stop_pending_grace = plan_.spec.grace_seconds});
}

void Runner::OnEnded(Worker& w, const AgentProcessEnd& end, uint64_t last_seq) {
  merger_->Finish(w.index);
  std::lock_guard lock(gang_mutex_);
  if (gang_.Ended(w.index, EndFailed(end), DescribeProcessEnd(end), end.stopped_by_request)) {
    StopRunning();
  }
  WorkerUpdate update{.state = gang_.state(w.index),
                      .exit_code = end.exit_code,
                      .signal = end.signal,
                      .end_ns = end.end_time_ns,
                      .last_seq = last_seq};
  if (w.gap) update.error = DescribeLogGap(*w.gap);
  UpdateWorker(w.index, update);
}

void Runner::OnLost(Worker& w, const std::string& reason) {
  merger_->Finish(w.index);
  std::lock_guard lock(gang_mutex_);
  if (gang_.Lost(w.index, reason)) StopRunning();
  UpdateWorker(w.index, {.state = WorkerState::kLost, .end_ns = NowUnixNs(), .error = reason});
}

void Runner::FollowAll(const std::vector<Worker*>& workers) {
  std::vector<LogFollowJob> jobs;
  for (Worker* w : workers) {
    LogFollowJob job;
    job.params.job_id = plan_.job.id;
    job.params.attempt = static_cast<uint32_t>(plan_.attempt);
    job.params.description = w->link->description();
    job.params.lost_after = kLostAfter;
    job.params.reconnect_pause = kReconnectPause;
    job.hooks = {[this, w] { return Client(*w); }, [this, w] { return Reconnect(*w); }, Say};
    const int index = w->index;
    job.on_batch = [this, index, w](std::vector<LogRecord>&& records) {
      if (!records.empty()) {
        const auto now = Clock::now();
        if (stall_) stall_->Output(now);
        w->last_output_ns = now.time_since_epoch().count();
        merger_->Add(index, records);
      }
      return true;
    };
    jobs.push_back(std::move(job));
  }
  if (plan_.spec.stall_seconds > 0) {
    stall_.emplace(std::chrono::seconds(plan_.spec.stall_seconds), started_,
                   [this](std::chrono::seconds silent) { OnStall(silent); });
  }
  FollowLogs(std::move(jobs), [&](size_t i, const LogFollowResult& result) {
    workers[i]->gap = result.gap;
    if (result.end && result.end->lost) {
      OnLost(*workers[i], SupervisorVanished());  // the gang says "lost: "
    } else if (result.end) {
      OnEnded(*workers[i], *result.end, result.next_seq - 1);
    } else {
      OnLost(*workers[i], result.lost);
    }
  });
  stall_.reset();  // joins its thread: no stall is reported after the logs are done
}

void Runner::OnStall(std::chrono::seconds silent) {
  std::lock_guard lock(gang_mutex_);
  const std::string reason =
      fmt::format("hung: no output from any worker for {} s (stall_seconds: {})", silent.count(),
                  plan_.spec.stall_seconds);
  if (gang_.Hung(reason)) StopRunning();
}

ExitCode Runner::Report() {
  std::lock_guard lock(gang_mutex_);
  ExitCode code = gang_.Outcome();
  const std::string& id = plan_.job.id;
  if (gang_.interrupted()) {
    Say(fmt::format("job {} interrupted: stopped on every worker", id));
  } else if (code == ExitCode::kOk) {
    Say(fmt::format("job {} succeeded on {} workers ({:.1f} s after the start)", id,
                    gang_.workers().size(), SecondsSince(started_)));
  } else if (const auto& cause = gang_.root_cause();
             cause && cause->worker == RootCause::kWholeGang) {
    Say(fmt::format("job {} failed: {}", id, cause->reason));
    const auto now = Clock::now().time_since_epoch().count();
    for (auto& w : workers_) {  // each worker's last line, and how long it has been silent
      const auto lines = merger_->LastLines(w->index);
      const int64_t last = w->last_output_ns;
      Say(fmt::format("  {}: {}; last line: {}", w->link->description(),
                      last ? fmt::format("silent for {:.0f} s", (now - last) / 1e9)
                           : std::string("no output at all"),
                      lines.empty() ? "(none)" : lines.back()));
    }
  } else if (cause) {
    Worker* w = by_index_.at(cause->worker);
    Say(fmt::format("job {} failed: {}: {}", id, w->link->description(), cause->reason));
    auto lines = merger_->LastLines(cause->worker);
    if (!lines.empty()) {
      Say(fmt::format("last lines of w{}:", cause->worker));
      for (const std::string& line : lines) Say("  | " + line);
    }
  }
  // A full disk on a worker lost nothing of what the launcher printed, but the worker's own
  // copy has a gap: say so, naming the worker.
  for (auto& w : workers_) {
    if (w->gap) Say(fmt::format("{}: {}", w->link->description(), DescribeLogGap(*w->gap)));
  }
  std::vector<int> stopped = gang_.StoppedByUs();
  if (!stopped.empty() && !gang_.interrupted()) {
    Say(fmt::format("stopped by podrun because of that failure: w{}", FormatWorkerRange(stopped)));
  }
  // Without a root cause, an attempt that did not succeed was stopped (podrun stop, elsewhere).
  AttemptState state = gang_.interrupted() || (code != ExitCode::kOk && !gang_.root_cause())
                           ? AttemptState::kStopped
                       : code == ExitCode::kOk ? AttemptState::kSucceeded
                                               : AttemptState::kFailed;
  SetAttempt(state, static_cast<int>(code), /*ended=*/true);
  return code;
}

ExitCode Runner::Run() {
  // Ctrl-C is taken by the watcher only: it blocks SIGINT before any other thread starts.
  // Once it has stopped, only the followers' ends (joined before) could add stoppers.
  InterruptWatcher interrupts([this] { OnInterrupt(); });

  try {
    agent_.emplace(AgentBinary::Locate());
  } catch (const Error& e) {
    Say(e.what());
    SetAttempt(AttemptState::kStartFailed, 3, true);
    return ExitCode::kUnreachable;
  }
  loop_.emplace();
  window_.emplace(loop_->executor(), plan_.pod.fanout);
  AgentLinkContext context{&*loop_, &*window_, &*agent_, plan_.home / "local"};
  for (int index : plan_.pod.selected) {
    auto w = std::make_unique<Worker>();
    w->index = index;
    w->link = MakeAgentLink(plan_.pod, index, context);
    by_index_[index] = w.get();
    workers_.push_back(std::move(w));
  }
  merger_ = std::make_unique<LogMerger>(
      plan_.home / "jobs" / plan_.job.id / std::to_string(plan_.attempt),
      LabelledOutput::ShouldColor(STDOUT_FILENO));

  size_t n = workers_.size();
  Say(fmt::format("connecting to {} worker{} ({})", n, n == 1 ? "" : "s", plan_.pod.description));
  auto phase = Clock::now();
  ConnectAll();
  int uploads = 0, relayed = 0;
  for (auto& w : workers_) {
    uploads += w->link->uploaded_agent() ? 1 : 0;
    relayed += w->link->uses_dial_stdio() ? 1 : 0;
  }
  if (std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->error.empty(); })) {
    Say(fmt::format("agents ready on {} workers in {:.2f} s{}{}", n, SecondsSince(phase),
                    uploads ? fmt::format(" (agent installed on {})", uploads) : "",
                    relayed ? fmt::format(" (stream-local forwarding refused: tunnel through "
                                          "dial-stdio on {})",
                                          relayed)
                            : ""));
    if (!CheckTpuWorkerNumbers()) {
      ReleasePrepared();
      SetAttempt(AttemptState::kStartFailed, static_cast<int>(ExitCode::kUsage), true);
      return ExitCode::kUsage;
    }
    SetupAll();
    phase = Clock::now();
    if (std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->error.empty(); })) {
      PrepareAll();
    }
  }
  {
    std::lock_guard lock(gang_mutex_);
    for (auto& w : workers_) {
      if (w->error.empty()) {
        gang_.Prepared(w->index);
      } else {
        Say(w->error);
        UpdateWorker(w->index, {.state = WorkerState::kFailed, .error = w->error});
        gang_.PrepareFailed(w->index, w->error);
      }
    }
    if (!gang_.ReadyForGo()) {
      ExitCode code = gang_.Outcome();
      if (!gang_.interrupted()) {
        Say(
            fmt::format("job {} did not start: {} of {} workers could not be prepared; nothing "
                        "was started anywhere",
                        plan_.job.id,
                        std::count_if(workers_.begin(), workers_.end(),
                                      [](auto& w) { return !w->error.empty(); }),
                        n));
      } else {
        Say("interrupted before the start: nothing was started anywhere");
      }
      SetAttempt(AttemptState::kStartFailed, static_cast<int>(code), true);
      ReleasePrepared();
      return code;
    }
    gang_.Go();
  }
  started_ = Clock::now();
  StartAll();
  int64_t first = INT64_MAX, last = 0;
  for (auto& w : workers_) {
    if (!w->error.empty()) continue;
    // In the launcher's clock, so that workers with different clocks compare.
    first = std::min(first, w->start.start_time_ns - w->clock_offset_ns);
    last = std::max(last, w->start.start_time_ns - w->clock_offset_ns);
  }
  if (last > 0) {
    Say(fmt::format("started on {} workers (start skew {:.1f} ms)", n,
                    static_cast<double>(last - first) / 1e6));
  }
  SetAttempt(AttemptState::kRunning);
  if (plan_.detach) {
    interrupts.Stop();
    JoinStoppers();
    if (gang_.root_cause()) return Report();
    Say(fmt::format("job {} runs detached; follow it with: podrun logs {} -f", plan_.job.id,
                    plan_.job.id));
    return ExitCode::kOk;
  }
  std::vector<Worker*> following;
  for (auto& w : workers_) {
    if (w->error.empty()) following.push_back(w.get());
  }
  // No thread per worker: the streams run on gRPC's threads (see FollowLogs).
  FollowAll(following);
  interrupts.Stop();
  JoinStoppers();
  return Report();
}

}  // namespace

ExitCode RunAttempt(JobStore& store, const AttemptPlan& plan) {
  Runner runner(store, plan);
  return runner.Run();
}

}  // namespace podrun
