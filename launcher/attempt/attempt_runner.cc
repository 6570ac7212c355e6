// One attempt of a job across the gang (DESIGN.md: the job, as data flowing through the system):
// the run from the first connection to the report. Its parts: attempt_phases.cc, attempt_gang.cc.
#include "launcher/job/attempt_runner.h"

#include "launcher/job/attempt_runner_parts.h"

namespace podrun {
namespace attempt_internal {

Runner::~Runner() {
  if (!jumps_) return;
  loop_->Run([this]() -> asio::awaitable<void> {
    jumps_->Close();
    co_return;
  }());
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
  if (!BuildSyncManifest()) {
    SetAttempt(AttemptState::kStartFailed, static_cast<int>(ExitCode::kUsage), true);
    return ExitCode::kUsage;
  }
  loop_.emplace();
  window_.emplace(loop_->executor(), plan_.pod.fanout);
  relay_.emplace(loop_->executor());
  jumps_.emplace(loop_->executor());
  AgentLinkContext context{&*loop_, &*window_, &*jumps_, &*agent_, &*relay_, plan_.home / "local"};
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
  progress_.emplace(STDERR_FILENO);
  BeginProgress("agents");
  ConnectAll();
  int uploads = 0, from_peers = 0, relayed = 0;
  for (auto& w : workers_) {
    uploads += w->link->uploaded_agent() ? 1 : 0;
    from_peers += w->link->relayed_agent() ? 1 : 0;
    relayed += w->link->uses_dial_stdio() ? 1 : 0;
  }
  if (std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->error.empty(); })) {
    Say(fmt::format(
        "agents ready on {} workers in {:.2f} s{}{}", n, SecondsSince(phase),
        uploads + from_peers
            ? fmt::format(
                  " (agent installed on {}: uploaded to {}, from peers to {}{})",
                  uploads + from_peers, uploads, from_peers,
                  relay_->failed_fetches()
                      ? fmt::format("; {} could not fetch it from a peer", relay_->failed_fetches())
                      : "")
            : "",
        relayed ? fmt::format(" (stream-local forwarding refused: tunnel through "
                              "dial-stdio on {})",
                              relayed)
                : ""));
    if (!CheckTpuWorkerNumbers()) {
      ReleasePrepared();
      SetAttempt(AttemptState::kStartFailed, static_cast<int>(ExitCode::kUsage), true);
      return ExitCode::kUsage;
    }
    SyncAll();
    if (std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->error.empty(); })) {
      MountAll();
    }
    if (std::all_of(workers_.begin(), workers_.end(), [](auto& w) { return w->error.empty(); })) {
      if (!plan_.spec.setup.empty()) progress_->End();  // setup's output comes next
      SetupAll();
    }
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
      progress_->End();  // the report comes next
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
  progress_->End();  // the job's output comes next
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

}  // namespace attempt_internal

ExitCode RunAttempt(JobStore& store, const AttemptPlan& plan) {
  attempt_internal::Runner runner(store, plan);
  return runner.Run();
}

}  // namespace podrun
