// An attempt while it runs: following every log, failures and hangs, stopping the gang, the report.
#include "launcher/job/attempt_runner_parts.h"
#include "launcher/job/preemption.h"

namespace podrun::attempt_internal {

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

void Runner::OnLost(Worker& w, const std::string& lost) {
  merger_->Finish(w.index);
  // A discovered pod's node may have been preempted: then that is what happened, said first.
  std::string reason = lost;
  if (auto state = NodeStateOfLostWorker(plan_.pod, w.index, plan_.home / "cache")) {
    reason = *state + "; " + lost;
  }
  std::lock_guard lock(gang_mutex_);
  if (gang_.Lost(w.index, reason)) StopRunning();
  WorkerUpdate update{.state = WorkerState::kLost, .end_ns = NowUnixNs(), .error = reason};
  // Out of reach is not ended: with stop_all its process may still hold the accelerators, so
  // the stop is recorded for the next podrun command that reaches it.
  if (plan_.spec.on_failure == OnFailure::kStopAll) {
    update.stop_pending_grace = plan_.spec.grace_seconds;
  }
  UpdateWorker(w.index, update);
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
    job.hooks = {[this, w] { return Client(*w); }, [this, w] { return Reconnect(*w); }, Say, {}};
    // Bulk output over a channel of its own where the link has one (SSH).
    job.hooks.open_stream = [this, w](uint64_t from_seq, AgentClient::OnBatch on_batch,
                                      AgentClient::OnStreamDone on_done) {
      return w->link->StartLogStream(plan_.job.id, static_cast<uint32_t>(plan_.attempt), from_seq,
                                     /*follow=*/true, std::move(on_batch), std::move(on_done));
    };
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

}  // namespace podrun::attempt_internal
