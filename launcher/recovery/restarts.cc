// Whole-gang restarts (see restarts.h).
#include "launcher/recovery/restarts.h"

#include <fmt/format.h>

#include <algorithm>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/recovery/pod_recovery.h"
#include "launcher/recovery/source_states.h"
#include "launcher/spec/pod_create.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

constexpr auto kFirstBackoff = std::chrono::seconds(5);
constexpr auto kMaxBackoff = std::chrono::minutes(5);
// How long the gang's followers reuse a node's state when several of its workers are lost.
constexpr auto kNodeAskEvery = std::chrono::seconds(3);

// "2 preemptions: 3m05s lost in all (the node took 1m10s, 1m02s to come back)", or "".
std::string PreemptionSummary(JobStore& store, const std::string& job_id) {
  const std::vector<PreemptionRecord> preemptions = RecoveryRecords(store).Preemptions(job_id);
  if (preemptions.empty()) return "";
  int64_t lost = 0;
  std::string back;
  for (const PreemptionRecord& p : preemptions) {
    lost += TimeLostToPreemption(store, job_id, p).value_or(0);
    back += (back.empty() ? "" : ", ") +
            (p.back_ns ? FormatDuration(*p.back_ns - p.seen_ns) : std::string("not back"));
  }
  return fmt::format("{} preemption{}: {} lost in all (the node took {} to come back)",
                     preemptions.size(), preemptions.size() == 1 ? "" : "s", FormatDuration(lost),
                     back);
}

// A stop (the keeper's SIGTERM) during the recovery after attempt plan.attempt: nothing is left
// to say the job recovers or will be recreated, and the attempt reads stopped.
ExitCode EndStoppedRecovery(JobStore& store, const AttemptPlan& plan) {
  RecoveryRecords records(store);
  records.EndRecovering(plan.job.id);
  for (const RecreationRecord& r : records.Recreations(plan.job.id)) {
    records.EndRecreation(plan.job.id, r);
  }
  const AttemptRecord attempt = store.GetAttempt(plan.job.id, plan.attempt);
  store.SetAttemptState(plan.job.id, plan.attempt, AttemptState::kStopped, attempt.exit_code,
                        attempt.ended_ns.value_or(NowUnixNs()));
  Say(fmt::format("job {} stopped during its recovery: no restart", plan.job.id));
  return ExitCode::kInterrupted;
}

}  // namespace

std::chrono::seconds RestartBackoff(int restart) {
  auto wait = kFirstBackoff;
  for (int i = 1; i < restart && wait < kMaxBackoff; ++i) wait *= 2;
  return std::min<std::chrono::seconds>(wait, kMaxBackoff);
}

std::optional<int64_t> TimeLostToPreemption(JobStore& store, const std::string& job_id,
                                            const PreemptionRecord& p) {
  // From the preemption seen to the next attempt's start on its workers.
  std::optional<int64_t> started;
  try {
    for (const WorkerRecord& w : store.Workers(job_id, p.attempt + 1)) {
      if (w.start_ns) started = std::min(started.value_or(*w.start_ns), *w.start_ns);
    }
  } catch (const Error&) {
  }
  if (!started) return std::nullopt;
  return *started - p.seen_ns;
}

bool KeeperTakesOver(ExitCode code) {
  return code == ExitCode::kOk || code == ExitCode::kFailed || code == ExitCode::kUnreachable;
}

RecoveriesUsed RecoveriesSince(const std::vector<AttemptRecord>& attempts) {
  RecoveriesUsed used;
  for (auto it = attempts.rbegin(); it != attempts.rend() && IsAutomatic(it->reason); ++it) {
    if (it->reason == AttemptReason::kRecoveryAfterPreemption) {
      ++used.preemptions;
    } else {
      ++used.restarts;
    }
  }
  return used;
}

bool SpecNeedsKeeper(const JobSpec& spec) {
  return spec.restarts > 0 || (spec.pod.create.has_value() && spec.preemptions.value_or(1) > 0);
}

ExitCode RunAttemptsWithRestarts(JobStore& store, AttemptPlan plan, const RestartOptions& options) {
  SourceStates nodes(plan.pod, plan.home / "cache", kNodeAskEvery);
  plan.lost_worker_reason = [&nodes](int index) { return nodes.LostWorkerReason(index); };
  RecoveryRecords records(store);
  ExitCode code = options.ended            ? *options.ended
                  : options.follow_running ? FollowAttempt(store, plan)
                                           : RunAttempt(store, plan);
  const ProvisionWait wait = options.wait ? options.wait : ProvisionWait(SleepUnlessInterrupted);
  RecoveriesUsed used = options.used;
  // Whether a preemption could be recovered: a slice the spec's create: remakes, and budget left.
  bool recreatable = false;
  for (const PodSourceRef& ref : PodSourcesOf(plan.pod)) {
    recreatable = recreatable || SpecCreateFor(plan.spec.pod, ref).has_value();
  }
  while (!plan.detach) {
    const bool restarts_left = used.restarts < plan.spec.restarts;
    const bool preemptions_left =
        recreatable && (!plan.spec.preemptions || used.preemptions < *plan.spec.preemptions);
    // A preemption without create: (waited for) counts too, where restarts: allows asking.
    if (!restarts_left && !preemptions_left &&
        RecoveryRecords(store).Recreations(plan.job.id).empty()) {
      break;
    }
    const auto attempt = store.LatestAttempt(plan.job.id);
    const bool failed =
        code == ExitCode::kFailed && attempt && attempt->state == AttemptState::kFailed;
    if (!failed &&
        !(code == ExitCode::kUnreachable && StartFailedOnAGoneSlice(store, plan, nodes, wait))) {
      break;
    }
    KeeperSignals* const keeper = options.keeper_signals;
    if (keeper && !keeper->EnterRecovery()) {
      code = EndStoppedRecovery(store, plan);
      break;
    }
    auto next = PrepareRestart(store, plan, used, nodes, wait);
    if (keeper && !keeper->LeaveRecovery()) {
      code = EndStoppedRecovery(store, plan);
      break;
    }
    if (std::holds_alternative<NoRestart>(next)) {
      records.EndRecovering(plan.job.id);
      break;
    }
    if (const ExitCode* give_up = std::get_if<ExitCode>(&next)) {
      if (*give_up == ExitCode::kInterrupted) Say("interrupted: no restart");
      records.EndRecovering(plan.job.id);
      code = *give_up;
      break;
    }
    const AttemptReason reason = std::get<AttemptReason>(next);
    plan.attempt = store.AddAttempt(plan.job.id, plan.pod.selected, reason);
    plan.resumed_from = store.GetAttempt(plan.job.id, plan.attempt).resumed_from;
    records.EndRecovering(plan.job.id);
    nodes.Forget();  // the nodes' names stay; what gcloud says of them is asked afresh
    if (reason == AttemptReason::kRecoveryAfterPreemption) {
      ++used.preemptions;
      Say(
          fmt::format("attempt {} of job {} (recovery after preemption {}{}; restarts used {} of "
                      "{}; resumed from {})",
                      plan.attempt, plan.job.id, used.preemptions,
                      plan.spec.preemptions ? fmt::format(" of {}", *plan.spec.preemptions) : "",
                      used.restarts, plan.spec.restarts, plan.resumed_from));
    } else {
      ++used.restarts;
      Say(fmt::format("attempt {} of job {} (restart {} of {}, resumed from {})", plan.attempt,
                      plan.job.id, used.restarts, plan.spec.restarts, plan.resumed_from));
    }
    code = RunAttempt(store, plan);
  }
  if (std::string summary = PreemptionSummary(store, plan.job.id); !summary.empty()) {
    Say(fmt::format("job {}: {}", plan.job.id, summary));
  }
  return code;
}

}  // namespace podrun
