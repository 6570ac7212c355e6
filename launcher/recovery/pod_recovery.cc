// What happens between a failed attempt and the next (see pod_recovery.h).
#include "launcher/recovery/pod_recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/recovery/api_outage.h"
#include "launcher/recovery/host_keys.h"
#include "launcher/recovery/provisioner.h"
#include "launcher/recovery/restarts.h"
#include "launcher/recovery/slice_wait.h"
#include "launcher/spec/pod_create.h"
#include "launcher/ssh/ssh_reach.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

RecreationRecord RecreationOf(const PodSourceRef& ref) {
  return {PodSourceKindName(ref.kind), ref.query.name, ref.query.zone,
          ref.query.project.value_or(""), 0};
}

// True when podrun itself began to recreate `q` for this job (its intent recorded before the
// delete): a slice found missing is then created, not mourned.
bool PodrunIsRecreating(RecoveryRecords& records, const std::string& job_id,
                        const PodSourceRef& q) {
  const RecreationRecord mine = RecreationOf(q);
  for (const RecreationRecord& r : records.Recreations(job_id)) {
    if (r.node == mine.node && r.zone == mine.zone && r.project == mine.project) return true;
  }
  return false;
}

// The preemption of `node` seen after `attempt` that is not over yet: the one whose recreation a
// keeper began and did not finish (it was stopped midway); its successor goes on with it.
std::optional<int64_t> OpenPreemption(RecoveryRecords& records, const std::string& job_id,
                                      int attempt, const std::string& node) {
  const std::vector<PreemptionRecord> all = records.Preemptions(job_id);
  for (auto p = all.rbegin(); p != all.rend(); ++p) {
    if (p->node == node && p->attempt == attempt && !p->back_ns) return p->id;
  }
  return std::nullopt;
}

// A slice that must be created again: preempted by the API, or one whose recreation podrun began
// (whatever it reads now: the old one deleting, gone, the new one creating or ready: a keeper
// killed at any phase of it), which is finished.
bool ToRecreate(RecoveryRecords& records, const AttemptPlan& plan, const SourceNow& n) {
  return n.preempted() || PodrunIsRecreating(records, plan.job.id, n.ref);
}

// Rethrows `e` when it is the API's bad minute (a transient gcloud failure): PrepareRestart waits
// it out and asks again. Call inside a catch block.
void RethrowIfTransient(const Error& e) {
  if (const auto* g = dynamic_cast<const GcloudError*>(&e);
      g && IsTransientGcloudFailure(g->failure())) {
    throw;
  }
}

// The workers of the attempt that were lost (their agents out of reach).
std::vector<int> LostWorkers(JobStore& store, const AttemptPlan& plan) {
  std::vector<int> lost;
  for (const WorkerRecord& w : store.Workers(plan.job.id, plan.attempt)) {
    if (w.state == WorkerState::kLost) lost.push_back(w.index);
  }
  return lost;
}

// A worker was lost while its slice reads ready: asks gcloud every poll until a slice is not
// (true), or every lost worker accepts a connection again where SSH reaches it (false), or
// LostWhileReadyLimit() has passed (false: the worker is handled as lost, the gang restarts
// without waiting longer). nullopt: given up.
std::optional<bool> WaitForTheApiToSay(const AttemptPlan& plan, const std::vector<int>& lost,
                                       SourceStates& nodes, const ProvisionWait& wait) {
  const auto poll = ReadyPollInterval();
  const auto limit = LostWhileReadyLimit();
  const auto until = std::chrono::steady_clock::now() + limit;
  std::vector<HostSpec> hosts;
  for (int i : lost) hosts.push_back(plan.pod.workers[static_cast<size_t>(i)].host);
  bool said = false;
  for (;;) {
    nodes.Forget();
    for (const SourceNow& n : nodes.All()) {
      if (!n.ready()) return true;
    }
    // Probed only where SSH goes straight to the worker (ssh_reach.h): through a jump host a
    // probe from here would ask another path, and only gcloud or the limit can answer.
    const auto probes = ProbeSshRoutes(hosts, plan.pod.ssh, std::chrono::seconds(3));
    if (std::all_of(probes.begin(), probes.end(),
                    [](ProbeResult r) { return r == ProbeResult::kReachable; })) {
      return false;
    }
    if (std::chrono::steady_clock::now() >= until) {
      Say(fmt::format(
          "w{} still out of reach after {} s while its slice reads ready: handled as lost",
          lost.front(), limit.count()));
      return false;
    }
    if (!said) {
      Say(
          fmt::format("w{} lost while its slice still reads ready: asking gcloud every {} s "
                      "until it says what happened (at most {} s)",
                      lost.front(), poll.count(), limit.count()));
      said = true;
    }
    if (!wait(std::min<std::chrono::seconds>(poll, std::chrono::duration_cast<std::chrono::seconds>(
                                                       until - std::chrono::steady_clock::now()) +
                                                       std::chrono::seconds(1)))) {
      return std::nullopt;
    }
  }
}

// WaitForReadySlices for `plan`'s pod (what it waits for recorded, for status: "recovering (MIG
// slice slice-1 is repairing, for 41s)"): the workers whose address changed, or the exit code to
// end with (gcloud failed: said; given up: 130).
std::variant<std::vector<int>, ExitCode> WaitUntilReadyAgain(JobStore& store, AttemptPlan& plan,
                                                             const ProvisionWait& wait) {
  RecoveryRecords records(store);
  try {
    auto moved = WaitForReadySlices(
        plan.pod, plan.home / "cache", ReadyPollInterval(), wait,
        [&records, &plan](const std::string& slice, const std::string& what) {
          records.SetRecovering(plan.job.id, {RecoveringPhase::kWaiting, slice, what, 0});
        },
        [&plan](const SourceNow& n) { return SpecCreateFor(plan.spec.pod, n.ref).has_value(); },
        OutageLimit(plan));
    if (!moved) return ExitCode::kInterrupted;
    return *moved;
  } catch (const SliceToRecreate&) {
    throw;
  } catch (const Error& e) {
    RethrowIfTransient(e);
    Say(e.what());
    return e.code();
  }
}

// The addresses of slice `slice`'s workers in `pod`.
std::vector<std::string> SliceHosts(const Pod& pod, int slice) {
  std::vector<std::string> hosts;
  for (const PodWorker& w : pod.workers) {
    if (w.slice == slice) hosts.push_back(w.host.host);
  }
  return hosts;
}

// Recreates the gone slice `slice` with `create`: the intent recorded before the delete, closed
// once the slice is ready, the old host keys of its workers forgotten (no other slice's) and the
// ones its new VMs publish pinned, each to its VM's own address, before anything connects to them
// (PointSliceAt may ask the VMs their numbers over SSH). Returns the new slice.
// A recreation an earlier keeper began (its intent open) is finished from whatever the slice reads
// now: the old one still deleting is waited for, a gone one created, a new one creating waited
// for, a ready one taken; never a second create beside the first. A VM preempted while the slice
// is made is one more preemption (recorded in `extra`), and the slice is made again.
// Made again from the spec's own zone on (a multislice's slices stay in the zone they live in);
// a slice made elsewhere moves there in the plan's pod, in `nodes` and in the job record.
SourceState RecreateSlice(JobStore& store, RecoveryRecords& records, AttemptPlan& plan,
                          const SourceNow& n, size_t slice, const TpuCreate& create,
                          SourceStates& nodes, const ProvisionWait& wait,
                          std::vector<int64_t>* extra) {
  const std::vector<std::string> old_hosts = SliceHosts(plan.pod, static_cast<int>(slice));
  const bool resuming = PodrunIsRecreating(records, plan.job.id, n.ref);
  if (!resuming) records.BeginRecreation(plan.job.id, RecreationOf(n.ref));
  PodSourceRef home = n.ref;
  TpuCreate slice_create = create;
  if (plan.pod.slices > 1) {
    slice_create.fallback_zones.clear();
  } else if (plan.spec.pod.zone) {
    home.query.zone = *plan.spec.pod.zone;
  }
  // What it waits for (a stockout, the queue, CREATING) is what status and ls show meanwhile.
  std::unique_ptr<Provisioner> provisioner = MakeProvisioner(
      home, slice_create, plan.home / "cache", ProvisionPollInterval(std::chrono::seconds(10)),
      wait,
      {.on_wait =
           [&records, &plan, &n](const std::string& what) {
             records.SetRecovering(plan.job.id, {RecoveringPhase::kRecreating, SliceLabel(n.ref),
                                                 "recreating: " + what, 0});
           },
       .on_preempted =
           [&records, &plan, &n, extra](const std::string& state) {
             extra->push_back(records.AddPreemption(plan.job.id, {.id = 0,
                                                                  .attempt = plan.attempt,
                                                                  .node = n.ref.query.name,
                                                                  .state = state,
                                                                  .seen_ns = NowUnixNs(),
                                                                  .back_ns = std::nullopt,
                                                                  .recreated = true}));
           }});
  if (resuming) {
    Say(fmt::format("{} {} is {}: finishing the recreation podrun began", PodSourceNoun(n.ref.kind),
                    n.ref.query.name, n.state));
  }
  const SliceReady ready =
      resuming ? provisioner->Ensure(/*recreate_preempted=*/true) : provisioner->Recreate();
  if (MoveSliceTo(plan.pod, slice, ready.where)) {
    nodes.MoveSlice(slice, ready.where);
    plan.job.options_json = WithPodSlices(plan.job.options_json, plan.pod);
    store.SetJobOptions(plan.job.id, plan.job.options_json);
  }
  // Keys first, then the intent closed: a keeper killed in between finishes the recreation (the
  // slice read ready) and pins them again.
  ForgetHostKeys(plan.pod.ssh.known_hosts, old_hosts, plan.pod.ssh.default_port.value_or(22));
  PinSourceHostKeys(*MakePodSource(ready.where, plan.home / "cache"), ready.state, plan.pod);
  records.EndRecreation(plan.job.id, RecreationOf(n.ref));
  return ready.state;
}

// Recreates (with the spec's create: for that slice) or waits for the gone slices; records each
// as a preemption, and the attempt as ended by one.
RestartStep RecoverGoneSlices(JobStore& store, AttemptPlan& plan, std::vector<SourceNow> now,
                              SourceStates& nodes, const RecoveriesUsed& used,
                              const ProvisionWait& wait) {
  RecoveryRecords records(store);
  store.SetAttemptEnd(plan.job.id, plan.attempt, AttemptEnd::kPreemption);
  const bool finishing = !records.Recreations(plan.job.id).empty();
  if (!finishing && plan.spec.preemptions && used.preemptions >= *plan.spec.preemptions) {
    for (const SourceNow& n : now) {
      if (!ToRecreate(records, plan, n)) continue;
      Say(
          fmt::format("{} {} is {}: the job has been recovered after {} preemption{} "
                      "(preemptions: {}): no more; the run ends here (raise preemptions: and "
                      "podrun rerun {})",
                      PodSourceNoun(n.ref.kind), n.ref.query.name, n.state, used.preemptions,
                      used.preemptions == 1 ? "" : "s", *plan.spec.preemptions, plan.job.id));
      break;
    }
    return NoRestart{};
  }
  std::vector<int64_t> preemptions;
  bool recreate_any = false;
  bool wait_any = false;
  for (const SourceNow& n : now) {
    if (!ToRecreate(records, plan, n)) continue;
    const bool create = SpecCreateFor(plan.spec.pod, n.ref).has_value();
    recreate_any = recreate_any || create;
    wait_any = wait_any || !create;
    const char* noun = PodSourceNoun(n.ref.kind);
    records.SetRecovering(
        plan.job.id,
        {create ? RecoveringPhase::kRecreating : RecoveringPhase::kWaiting, SliceLabel(n.ref),
         fmt::format("{} {} {} ({})", create ? "recreating" : "waiting for", noun, n.ref.query.name,
                     n.state),
         0});
    const std::optional<int64_t> open =
        PodrunIsRecreating(records, plan.job.id, n.ref)
            ? OpenPreemption(records, plan.job.id, plan.attempt, n.ref.query.name)
            : std::nullopt;
    if (open) {  // one preemption, one time lost, however many keepers it took
      preemptions.push_back(*open);
      continue;
    }
    Say(fmt::format("{} {} is {}{}", noun, n.ref.query.name, n.state,
                    create ? ": deleting it and creating it again (pod.create)" : ""));
    preemptions.push_back(records.AddPreemption(plan.job.id, {.id = 0,
                                                              .attempt = plan.attempt,
                                                              .node = n.ref.query.name,
                                                              .state = n.state,
                                                              .seen_ns = NowUnixNs(),
                                                              .back_ns = std::nullopt,
                                                              .recreated = create}));
  }
  std::vector<int> moved;
  if (recreate_any) {
    try {
      for (size_t slice = 0; slice < now.size(); ++slice) {
        const SourceNow& n = now[slice];
        std::optional<TpuCreate> create = SpecCreateFor(plan.spec.pod, n.ref);
        if (!create || !ToRecreate(records, plan, n)) continue;
        const SourceState state =
            RecreateSlice(store, records, plan, n, slice, *create, nodes, wait, &preemptions);
        if (!wait_any) {
          for (int k : PointSliceAt(plan.pod, slice, state)) moved.push_back(k);
        }
      }
      nodes.Forget();
    } catch (const Error& e) {
      RethrowIfTransient(e);
      Say(e.what());
      return e.code();
    }
  }
  if (wait_any) {
    auto changed = WaitUntilReadyAgain(store, plan, wait);
    if (const ExitCode* give_up = std::get_if<ExitCode>(&changed)) return *give_up;
    moved = std::get<std::vector<int>>(changed);
  }
  for (int64_t id : preemptions) records.SetPreemptionBack(id);
  if (!moved.empty()) store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
  return AttemptReason::kRecoveryAfterPreemption;
}

// The slices that are gone without podrun or the API saying why: deleted by someone else.
std::vector<const SourceNow*> DeletedByOthers(RecoveryRecords& records, const AttemptPlan& plan,
                                              const std::vector<SourceNow>& now) {
  std::vector<const SourceNow*> out;
  for (const SourceNow& n : now) {
    if (n.deleted() && !PodrunIsRecreating(records, plan.job.id, n.ref)) out.push_back(&n);
  }
  return out;
}

}  // namespace

std::chrono::seconds LostWhileReadyLimit() {
  if (const char* env = std::getenv("PODRUN_LOST_READY_LIMIT_SECONDS")) {
    if (const int seconds = std::atoi(env); seconds > 0) return std::chrono::seconds(seconds);
  }
  return std::chrono::minutes(5);
}

bool StartFailedOnAGoneSlice(JobStore& store, const AttemptPlan& plan, SourceStates& nodes,
                             const ProvisionWait& wait) {
  if (nodes.size() == 0) return false;
  RecoveryRecords records(store);
  ApiOutage outage(ApiNameOf(PodSourcesOf(plan.pod).front().kind), OutageLimit(plan), wait,
                   [&records, &plan](const std::string& what) {
                     records.SetRecovering(plan.job.id, {RecoveringPhase::kApiOutage, "", what, 0});
                   });
  try {
    return outage.Run([&] {
      nodes.Forget();
      for (const SourceNow& n : nodes.All()) {
        if (SpecCreateFor(plan.spec.pod, n.ref) && ToRecreate(records, plan, n)) return true;
      }
      return false;
    });
  } catch (const Error& e) {
    // Not knowing is said, and the start reads as it failed (a permanent refusal, given up).
    Say(fmt::format("could not ask whether the pod's slices are still there: {}", e.what()));
  }
  return false;
}

namespace {

RestartStep PrepareRestartOnce(JobStore& store, AttemptPlan& plan, const RecoveriesUsed& used,
                               SourceStates& nodes, const ProvisionWait& wait) {
  RecoveryRecords records(store);
  if (nodes.size() > 0) {
    try {
      // A node the gang's followers just saw gone stays gone (it never comes back by itself):
      // that answer serves. Otherwise gcloud is asked afresh.
      std::vector<SourceNow> now = nodes.All();
      auto gone = [&] {
        return std::any_of(now.begin(), now.end(), [&](const SourceNow& n) {
          return ToRecreate(records, plan, n) || n.deleted();
        });
      };
      if (!gone()) {
        nodes.Forget();
        now = nodes.All();
      }
      if (!gone()) {
        const std::vector<int> lost = LostWorkers(store, plan);
        if (!lost.empty()) {
          records.SetRecovering(
              plan.job.id, {RecoveringPhase::kAsking, "",
                            fmt::format("asking gcloud what happened to w{}", lost.front()), 0});
          std::optional<bool> said = WaitForTheApiToSay(plan, lost, nodes, wait);
          if (!said) return ExitCode::kInterrupted;
          if (*said) now = nodes.All();
        }
      }
      if (const auto deleted = DeletedByOthers(records, plan, now); !deleted.empty()) {
        Say(
            fmt::format("{} {} no longer exists and podrun did not delete it: someone "
                        "removed it, so podrun does not bring it back; the run ends here "
                        "(podrun up SPEC creates it again, then podrun rerun {})",
                        PodSourceNoun(deleted.front()->ref.kind), deleted.front()->ref.query.name,
                        plan.job.id));
        return ExitCode::kFailed;
      }
      if (gone()) return RecoverGoneSlices(store, plan, std::move(now), nodes, used, wait);
    } catch (const Error& e) {
      RethrowIfTransient(e);
      Say(e.what());
      return e.code();
    }
  }
  if (used.restarts >= plan.spec.restarts) return NoRestart{};  // a failure: restarts: used up
  const int restart = used.restarts + 1;
  const auto backoff = RestartBackoff(restart);
  records.SetRecovering(plan.job.id, {RecoveringPhase::kRestarting, "",
                                      fmt::format("restarting the gang in {} s (restart {} of {})",
                                                  backoff.count(), restart, plan.spec.restarts),
                                      0});
  Say(fmt::format("restarting the whole gang in {} s (restart {} of {}; Ctrl-C to give up)",
                  backoff.count(), restart, plan.spec.restarts));
  if (!wait(backoff)) return ExitCode::kInterrupted;
  // A slice that is not ready for another reason (CREATING while a queued resource recreates
  // it, a MIG repairing its VMs) is waited for, and the gang restarts at its current addresses.
  auto moved = WaitUntilReadyAgain(store, plan, wait);
  if (const ExitCode* give_up = std::get_if<ExitCode>(&moved)) return *give_up;
  if (!std::get<std::vector<int>>(moved).empty()) {
    store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
  }
  return RestartReasonAfter(store.GetAttempt(plan.job.id, plan.attempt).ended_by);
}

}  // namespace

std::chrono::seconds OutageLimit(const AttemptPlan& plan) {
  for (const PodSourceRef& ref : PodSourcesOf(plan.pod)) {
    if (std::optional<TpuCreate> create = SpecCreateFor(plan.spec.pod, ref)) {
      return CapacityWaitOf(*create);
    }
  }
  return kDefaultCapacityWait;
}

RestartStep PrepareRestart(JobStore& store, AttemptPlan& plan, const RecoveriesUsed& used,
                           SourceStates& nodes, const ProvisionWait& wait) {
  RecoveryRecords records(store);
  const std::vector<PodSourceRef> refs = PodSourcesOf(plan.pod);
  ApiOutage outage(ApiNameOf(refs.empty() ? PodSourceKind::kTpuNode : refs.front().kind),
                   OutageLimit(plan), wait, [&records, &plan](const std::string& what) {
                     records.SetRecovering(plan.job.id, {RecoveringPhase::kApiOutage, "", what, 0});
                   });
  // A slice the wait found preempted or gone (SliceToRecreate) is asked about again, and
  // recreated; bounded, so that a source that keeps flipping cannot loop for ever.
  for (int asked = 0;; ++asked) {
    try {
      bool again = asked > 0;  // the followers' answers serve the first try only
      return outage.Run([&] {
        if (again) nodes.Forget();
        again = true;
        return PrepareRestartOnce(store, plan, used, nodes, wait);
      });
    } catch (const SliceToRecreate& e) {
      if (asked >= 10) {
        Say(e.what());
        return ExitCode::kUnreachable;
      }
    } catch (const Error& e) {  // given up, or a permanent refusal: as gcloud said it
      Say(e.what());
      return e.code();
    }
  }
}

}  // namespace podrun
