// An attempt while it runs: following every log, failures and hangs, stopping the gang, the report.
#include "launcher/attempt/gang_driver.h"

#include <fmt/format.h>
#include <unistd.h>

#include "launcher/attempt/hang_report.h"
#include "launcher/attempt/log_follower.h"
#include "launcher/connect/job_agents.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"
#include "launcher/pod/worker_range.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
// A worker whose agent gives no progress for this long is lost (LogFollowParams).
constexpr auto kLostAfter = std::chrono::seconds(20);
constexpr auto kReconnectPause = std::chrono::milliseconds(500);
// A stop that cannot be delivered is retried (reconnecting) for this long, then recorded as
// pending in the job store for the next command that reaches the worker.
constexpr auto kStopRetryFor = std::chrono::seconds(20);
// While a worker cannot be reached, its TPU node is asked about at most this often.

// A start never confirmed is a failure whatever its exit code: the gang never ran whole.
bool EndFailed(const ProcessEnd& end) {
  return end.start_unconfirmed || !end.exit_code || *end.exit_code != 0;
}

}  // namespace

GangDriver::~GangDriver() {
  stall_.reset();  // its thread could start stoppers
  progress_.reset();
  stoppers_.JoinAll();
}

void GangDriver::OpenLog() {
  output_ = std::make_unique<AttemptOutput>(
      plan_.home / "jobs" / plan_.job.id / std::to_string(plan_.attempt),
      LabelledOutput::ShouldColor(STDOUT_FILENO));
}

bool GangDriver::Barrier(const std::function<void(ExitCode outcome, bool interrupted)>& not_ready) {
  std::vector<AttemptWorker*> failed;
  bool go = false, interrupted = false;
  ExitCode outcome = ExitCode::kOk;
  {
    std::lock_guard lock(mutex_);
    for (auto& w : workers_.all()) {
      if (w->error.empty()) {
        gang_.Prepared(w->index);
      } else {
        gang_.PrepareFailed(w->index, w->error);
        failed.push_back(w.get());
      }
    }
    go = gang_.ReadyForGo();
    if (go) {
      gang_.Go();
    } else {  // aborted: nothing can start or be stopped any more
      outcome = gang_.Outcome();
      interrupted = gang_.interrupted();
    }
  }
  for (AttemptWorker* w : failed) {
    Say(w->error);
    recorder_.UpdateWorker(w->index, {.state = WorkerState::kFailed, .error = w->error});
  }
  if (!go) not_ready(outcome, interrupted);
  return go;
}

void GangDriver::RecordStarts() {
  std::vector<AttemptWorker*> unsent;
  {
    std::lock_guard lock(mutex_);
    std::vector<AttemptWorker*> late;  // answered after the gang began to stop: stopped too
    for (auto& w : workers_.all()) {
      if (w->error.empty()) {
        if (gang_.Started(w->index)) late.push_back(w.get());
      } else if (gang_.StartFailed(w->index, w->error)) {
        unsent = StopRunning();
      }
    }
    for (AttemptWorker* w : late) {
      if (!stoppers_.Start([this, w] { StopWorker(*w); })) unsent.push_back(w);
    }
  }
  for (auto& w : workers_.all()) {
    if (w->error.empty()) {
      recorder_.UpdateWorker(w->index,
                             {.state = WorkerState::kRunning, .start_ns = w->start.start_time_ns});
    } else {
      Say(w->error);
      recorder_.UpdateWorker(w->index, {.state = WorkerState::kFailed, .error = w->error});
    }
  }
  RecordUnsentStops(unsent);
}

std::vector<AttemptWorker*> GangDriver::Resume(int64_t started_ns) {
  resume_from_ = output_->Resume();
  resumed_at_ = Clock::now();
  std::vector<AttemptWorker*> following;
  {
    std::lock_guard lock(mutex_);
    for (auto& w : workers_.all()) gang_.Prepared(w->index);
    gang_.Go();
    for (auto& w : workers_.all()) {
      (void)gang_.Started(w->index);  // under the lock since Go: nothing stops it meanwhile
      following.push_back(w.get());
    }
    const auto ago = std::chrono::nanoseconds(std::max<int64_t>(0, NowUnixNs() - started_ns));
    started_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(ago);
  }
  for (AttemptWorker* w : following) {
    if (w->error.empty()) continue;
    Say(fmt::format("{}: not reachable yet ({}); reconnecting", w->description(), w->error));
    w->error.clear();  // followed: its reconnects and their limit are the follower's
  }
  return following;
}

bool GangDriver::HasRootCause() {
  std::lock_guard lock(mutex_);
  return gang_.root_cause().has_value();
}

void GangDriver::OnInterrupt() {
  std::vector<AttemptWorker*> unsent;
  {
    std::lock_guard lock(mutex_);
    if (gang_.interrupted()) return;
    if (gang_.Interrupt()) unsent = StopRunning();
  }
  Say("interrupted: stopping the job on every worker (Ctrl-C again has no further effect)");
  RecordUnsentStops(unsent);
}

void GangDriver::JoinStoppers() { stoppers_.JoinAll(); }

std::vector<AttemptWorker*> GangDriver::StopRunning() {
  std::vector<AttemptWorker*> unsent;
  for (int index : gang_.Running()) {
    AttemptWorker* w = &workers_.at(index);
    if (!stoppers_.Start([this, w] { StopWorker(*w); })) unsent.push_back(w);
  }
  return unsent;
}

void GangDriver::RecordUnsentStops(const std::vector<AttemptWorker*>& unsent) {
  for (AttemptWorker* w : unsent) {
    Say(
        fmt::format("{}: stop: no thread to send it; it is recorded for the next podrun command "
                    "that reaches this worker",
                    w->description()));
    recorder_.UpdateWorker(w->index, {.stop_pending_grace = plan_.spec.grace_seconds});
  }
}

void GangDriver::StopWorker(AttemptWorker& w) {
  const auto grace = std::chrono::seconds(plan_.spec.grace_seconds);
  const auto give_up_at = Clock::now() + kStopRetryFor;
  std::string error = "not connected";
  for (;;) {
    try {
      if (auto client = w.client()) {
        client->Stop(plan_.job.id, static_cast<uint32_t>(plan_.attempt), grace);
        return;
      }
    } catch (const AgentRefusal& e) {
      // The agent answered: asking again cannot help. When it has no such job (its VM was
      // preempted and wiped), nothing runs there to stop.
      if (e.kind() != AgentRefusal::Kind::kNotFound) {
        Say(fmt::format("{}: stop refused: {}", w.description(), e.what()));
      }
      return;
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (Clock::now() >= give_up_at) break;
    std::this_thread::sleep_for(kReconnectPause);
    try {
      w.Reconnect();
    } catch (const std::exception& e) {
      error = e.what();
      // Out of reach on a TPU node that is gone (preempted): nothing runs there to stop.
      if (auto gone = GoneNode(w.index)) {
        Say(fmt::format("{}: not stopped: {}", w.description(), *gone));
        return;
      }
    }
  }
  Say(fmt::format(
      "{}: the stop could not be delivered ({}); it is recorded, and the next podrun command "
      "that reaches this worker delivers it (e.g. podrun status {})",
      w.description(), error, plan_.job.id));
  recorder_.UpdateWorker(w.index, {.stop_pending_grace = plan_.spec.grace_seconds});
}

void GangDriver::OnEnded(AttemptWorker& w, const ProcessEnd& end, uint64_t last_seq) {
  output_->Finish(w.index);
  if (progress_) progress_->Ended(w.index, /*reachable=*/true);  // its last steps first
  WorkerUpdate update{.exit_code = end.exit_code,
                      .signal = end.signal,
                      .end_ns = end.end_time_ns,
                      .last_seq = last_seq};
  if (end.start_unconfirmed) update.error = DescribeProcessEnd(end);
  if (w.gap) update.error = DescribeLogGap(*w.gap);
  std::vector<AttemptWorker*> unsent;
  {
    std::lock_guard lock(mutex_);
    if (gang_.Ended(w.index, EndFailed(end), DescribeProcessEnd(end), end.stopped_by_request)) {
      unsent = StopRunning();
    }
    update.state = gang_.state(w.index);
  }
  recorder_.UpdateWorker(w.index, update);
  RecordUnsentStops(unsent);
}

void GangDriver::OnLost(AttemptWorker& w, const std::string& lost, bool known_gone) {
  output_->Finish(w.index);
  if (progress_) progress_->Ended(w.index, /*reachable=*/false);
  // A discovered pod's node may have been preempted: then that is what happened, said first.
  std::string reason = lost;
  if (!known_gone) {
    if (auto state = GoneNode(w.index)) reason = *state + "; " + lost;
  }
  std::vector<AttemptWorker*> unsent;
  {
    std::lock_guard lock(mutex_);
    if (gang_.Lost(w.index, reason)) unsent = StopRunning();
  }
  WorkerUpdate update{.state = WorkerState::kLost, .end_ns = NowUnixNs(), .error = reason};
  // Out of reach is not ended: with stop_all its process may still hold the accelerators, so
  // the stop is recorded for the next podrun command that reaches it.
  if (plan_.spec.on_failure == OnFailure::kStopAll) {
    update.stop_pending_grace = plan_.spec.grace_seconds;
  }
  recorder_.UpdateWorker(w.index, update);
  RecordUnsentStops(unsent);
}

void GangDriver::FollowAll(const std::vector<AttemptWorker*>& workers) {
  std::vector<int> indexes;
  for (AttemptWorker* w : workers) indexes.push_back(w->index);
  // Steps are read on the workers: each tick asks every running worker's agent for its record.
  auto fetch = [this](int index, StepTracker& tracker) {
    const AttemptWorker* w = workers_.Find(index);
    if (!w) return;
    try {
      if (std::shared_ptr<AgentClient> client = w->client()) {
        if (auto steps = client->Steps(plan_.job.id, static_cast<uint32_t>(plan_.attempt))) {
          tracker.Update(index, *steps, w->connection.clock_offset_ns());
        }
      }
    } catch (const std::exception&) {
      // Out of reach for now: its follower deals with that; the next tick asks again.
    }
  };
  progress_.emplace(plan_.spec, indexes, Say, fetch,
                    [this](const std::vector<WorkerProgress>& progress,
                           const std::vector<StepSamplesUpdate>& samples) {
                      recorder_.SaveProgress(progress, samples);
                    });
  std::vector<LogFollowJob> jobs;
  for (AttemptWorker* w : workers) {
    LogFollowJob job;
    job.params.job_id = plan_.job.id;
    if (auto from = resume_from_.find(w->index); from != resume_from_.end()) {
      job.params.from_seq = from->second;
    }
    job.params.attempt = static_cast<uint32_t>(plan_.attempt);
    job.params.description = w->description();
    job.params.lost_after = kLostAfter;
    job.params.reconnect_pause = kReconnectPause;
    job.hooks = {[w] { return w->client(); },
                 [this, w] {
                   try {
                     return w->Reconnect();
                   } catch (const std::exception&) {
                     // Out of reach: if its TPU node is gone, the worker is lost now.
                     if (auto gone = GoneNode(w->index)) throw GiveUpWorker(*gone);
                     throw;
                   }
                 },
                 Say,
                 {}};
    // Bulk output over a channel of its own where the link has one (SSH).
    job.hooks.open_stream = [this, w](uint64_t from_seq, AgentLogReader::OnBatch on_batch,
                                      AgentLogReader::OnStreamDone on_done) {
      return w->connection.link().StartLogStream(
          plan_.job.id, static_cast<uint32_t>(plan_.attempt), from_seq,
          /*follow=*/true, std::move(on_batch), std::move(on_done));
    };
    const int index = w->index;
    job.on_batch = [this, index, w](std::vector<LogRecord>&& records) {
      if (!records.empty()) {
        const auto now = Clock::now();
        if (stall_) stall_->Output(now);
        w->last_output_ns = now.time_since_epoch().count();
        output_->Add(index, records);
      }
      return true;
    };
    jobs.push_back(std::move(job));
  }
  if (plan_.spec.stall_seconds > 0) {
    // A resumed follow knows nothing of the silence before it: it counts from its own start.
    stall_.emplace(std::chrono::seconds(plan_.spec.stall_seconds), resumed_at_.value_or(started_),
                   [this](std::chrono::seconds silent) { OnStall(silent); });
  }
  progress_->Start();
  FollowLogs(std::move(jobs), [&](size_t i, const LogFollowResult& result) {
    workers[i]->gap = result.gap;
    if (result.end && result.end->lost) {
      OnLost(*workers[i], SupervisorVanished());  // the gang says "lost: "
    } else if (result.end) {
      OnEnded(*workers[i], *result.end, result.next_seq - 1);
    } else {
      OnLost(*workers[i], result.lost, result.lost_by_hook);
    }
  });
  stall_.reset();     // joins its thread: no stall is reported after the logs are done
  progress_->Stop();  // the last steps saved
}

std::optional<std::string> GangDriver::GoneNode(int index) {
  return plan_.lost_worker_reason ? plan_.lost_worker_reason(index) : std::nullopt;
}

void GangDriver::OnStall(std::chrono::seconds silent) {
  std::string reason = fmt::format("hung: no output from any worker for {} s (stall_seconds: {})",
                                   silent.count(), plan_.spec.stall_seconds);
  // What every worker is doing, asked before anything is stopped.
  Say(reason + "; asking every worker what its processes are doing");
  const std::vector<WhyLine> verdict =
      MakeHangReport(plan_, recorder_, workers_, progress_ ? &progress_->tracker() : nullptr);
  if (!verdict.empty() && verdict.front().suspect) {
    reason += "; " + verdict.front().text;
  }
  std::vector<AttemptWorker*> unsent;
  {
    std::lock_guard lock(mutex_);
    if (gang_.Hung(reason)) unsent = StopRunning();
  }
  RecordUnsentStops(unsent);
}

ExitCode GangDriver::Report() {
  // The gang as it ended, copied: the report's writes are made without the lock.
  const Gang gang = [this] {
    std::lock_guard lock(mutex_);
    return gang_;
  }();
  ExitCode code = gang.Outcome();
  const std::string& id = plan_.job.id;
  if (gang.interrupted()) {
    Say(fmt::format("job {} interrupted: stopped on every worker", id));
  } else if (code == ExitCode::kOk) {
    Say(fmt::format("job {} succeeded on {} workers ({:.1f} s after the start)", id,
                    gang.workers().size(), SecondsSince(started_)));
  } else if (const auto& cause = gang.root_cause();
             cause && cause->worker == RootCause::kWholeGang) {
    Say(fmt::format("job {} failed: {}", id, cause->reason));
    recorder_.SetCause(AttemptEnd::kHang, cause->reason);
    const auto now = Clock::now().time_since_epoch().count();
    for (auto& w : workers_.all()) {  // each worker's last line, and how long it has been silent
      const auto lines = output_->LastLines(w->index);
      const int64_t last = w->last_output_ns;
      Say(fmt::format("  {}: {}; last line: {}", w->description(),
                      last ? fmt::format("silent for {:.0f} s", (now - last) / 1e9)
                           : std::string("no output at all"),
                      lines.empty() ? "(none)" : lines.back()));
    }
  } else if (cause) {
    const AttemptWorker* w = &workers_.at(cause->worker);
    Say(fmt::format("job {} failed: {}: {}", id, w->description(), cause->reason));
    recorder_.SetCause(AttemptEnd::kFailure, fmt::format("w{}: {}", cause->worker, cause->reason));
    auto lines = output_->LastLines(cause->worker);
    if (!lines.empty()) {
      Say(fmt::format("last lines of w{}:", cause->worker));
      for (const std::string& line : lines) Say("  | " + line);
    }
  }
  // A full disk on a worker lost nothing of what the launcher printed, but the worker's own
  // copy has a gap: say so, naming the worker.
  for (auto& w : workers_.all()) {
    if (w->gap) Say(fmt::format("{}: {}", w->description(), DescribeLogGap(*w->gap)));
  }
  std::vector<int> stopped = gang.StoppedByUs();
  if (!stopped.empty() && !gang.interrupted()) {
    Say(fmt::format("stopped by podrun because of that failure: w{}", FormatWorkerRange(stopped)));
  }
  // Without a root cause, an attempt that did not succeed was stopped (podrun stop, elsewhere).
  AttemptState state = gang.interrupted() || (code != ExitCode::kOk && !gang.root_cause())
                           ? AttemptState::kStopped
                       : code == ExitCode::kOk ? AttemptState::kSucceeded
                                               : AttemptState::kFailed;
  recorder_.SetAttempt(state, static_cast<int>(code), /*ended=*/true);
  return code;
}

}  // namespace podrun
