// What happens between a failed attempt and the next (see pod_recovery.h).
#include "launcher/recovery/pod_recovery.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/recovery/host_keys.h"
#include "launcher/recovery/node_wait.h"
#include "launcher/recovery/restarts.h"
#include "launcher/spec/pod_create.h"
#include "launcher/ssh/ssh_reach.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

RecreationRecord RecreationOf(const TpuQuery& q) {
  return {q.name, q.zone, q.project.value_or(""), 0};
}

// True when podrun itself began to recreate `q` for this job (its intent recorded before the
// delete): a node found missing is then created, not mourned.
bool PodrunIsRecreating(RecoveryRecords& records, const std::string& job_id, const TpuQuery& q) {
  const RecreationRecord mine = RecreationOf(q);
  for (const RecreationRecord& r : records.Recreations(job_id)) {
    if (r.node == mine.node && r.zone == mine.zone && r.project == mine.project) return true;
  }
  return false;
}

// A node that must be created again: preempted by the API, or deleted by podrun itself.
bool ToRecreate(RecoveryRecords& records, const AttemptPlan& plan, const NodeNow& n) {
  return n.preempted() || (n.deleted() && PodrunIsRecreating(records, plan.job.id, n.query));
}

// The workers of the attempt that were lost (their agents out of reach).
std::vector<int> LostWorkers(JobStore& store, const AttemptPlan& plan) {
  std::vector<int> lost;
  for (const WorkerRecord& w : store.Workers(plan.job.id, plan.attempt)) {
    if (w.state == WorkerState::kLost) lost.push_back(w.index);
  }
  return lost;
}

// A worker was lost while its node reads READY: asks gcloud every poll until a node is not
// READY (true), or every lost worker accepts a connection again where SSH reaches it (false), or
// LostWhileReadyLimit() has passed (false: the worker is handled as lost, the gang restarts
// without waiting longer). nullopt: given up.
std::optional<bool> WaitForTheApiToSay(const AttemptPlan& plan, const std::vector<int>& lost,
                                       NodeStates& nodes, const TpuWait& wait) {
  const auto poll = ReadyPollInterval();
  const auto limit = LostWhileReadyLimit();
  const auto until = std::chrono::steady_clock::now() + limit;
  std::vector<HostSpec> hosts;
  for (int i : lost) hosts.push_back(plan.pod.workers[static_cast<size_t>(i)].host);
  bool said = false;
  for (;;) {
    nodes.Forget();
    for (const NodeNow& n : nodes.All()) {
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
          "w{} still out of reach after {} s while its TPU node reads READY: handled as lost",
          lost.front(), limit.count()));
      return false;
    }
    if (!said) {
      Say(
          fmt::format("w{} lost while its TPU node still reads READY: asking gcloud every {} s "
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

// WaitForReadyNodes for `plan`'s pod: the workers whose address changed, or the exit code to end
// with (gcloud failed: said; given up: 130).
std::variant<std::vector<int>, ExitCode> WaitUntilReadyAgain(AttemptPlan& plan,
                                                             const TpuWait& wait) {
  try {
    auto moved = WaitForReadyNodes(plan.pod, plan.home / "cache", ReadyPollInterval(), wait);
    if (!moved) return ExitCode::kInterrupted;
    return *moved;
  } catch (const Error& e) {
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

// Recreates the gone node of slice `slice` with `create`: the intent recorded before the delete,
// fulfilled once it is READY; the old host keys of the node's workers forgotten (no other
// node's). Returns the new node.
TpuNode RecreateSlice(RecoveryRecords& records, AttemptPlan& plan, size_t slice,
                      const TpuCreate& create, const TpuWait& wait) {
  const TpuQuery& q = plan.pod.tpu_nodes[slice];
  const std::vector<std::string> old_hosts = SliceHosts(plan.pod, static_cast<int>(slice));
  records.BeginRecreation(plan.job.id, RecreationOf(q));
  // What it waits for (a stockout, the queue, CREATING) is what status and ls show meanwhile.
  TpuProvisioner provisioner(q, create, TpuPollInterval(std::chrono::seconds(10)), wait,
                             {.on_wait = [&records, &plan](const std::string& what) {
                               records.SetRecovering(plan.job.id, "recreating: " + what);
                             }});
  TpuNode node = provisioner.Recreate().node;
  records.EndRecreation(plan.job.id, RecreationOf(q));
  ForgetHostKeys(plan.pod.ssh.known_hosts, old_hosts, plan.pod.ssh.default_port.value_or(22));
  return node;
}

// Pins the host keys the recreated node of slice `slice` publishes, at its workers' new
// addresses (host_keys.h): only that node's.
void PinRecreatedSlice(const AttemptPlan& plan, size_t slice) {
  const TpuQuery& q = plan.pod.tpu_nodes[slice];
  PinNodeHostKeys(q, plan.pod.ssh.known_hosts, NodeHostKeyAddresses(plan.pod, q.name));
}

// Recreates (with the spec's create: for that node) or waits for the gone nodes; records each
// as a preemption, and the attempt as ended by one.
std::variant<AttemptReason, ExitCode> RecoverGoneNodes(JobStore& store, AttemptPlan& plan,
                                                       std::vector<NodeNow> now, NodeStates& nodes,
                                                       const TpuWait& wait) {
  RecoveryRecords records(store);
  store.SetAttemptEnd(plan.job.id, plan.attempt, AttemptEnd::kPreemption);
  std::vector<int64_t> preemptions;
  bool recreate_any = false;
  bool wait_any = false;
  for (const NodeNow& n : now) {
    if (!ToRecreate(records, plan, n)) continue;
    const bool create = SpecCreateCovers(plan.spec.pod, n.query);
    recreate_any = recreate_any || create;
    wait_any = wait_any || !create;
    Say(fmt::format("TPU node {} is {}{}", n.query.name, n.state(),
                    create ? ": deleting it and creating it again (pod.create)" : ""));
    records.SetRecovering(plan.job.id,
                          fmt::format("{} TPU node {} ({})", create ? "recreating" : "waiting for",
                                      n.query.name, n.state()));
    preemptions.push_back(records.AddPreemption(plan.job.id, {.id = 0,
                                                              .attempt = plan.attempt,
                                                              .node = n.query.name,
                                                              .state = n.state(),
                                                              .seen_ns = NowUnixNs(),
                                                              .back_ns = std::nullopt,
                                                              .recreated = create}));
  }
  std::vector<int> moved;
  std::vector<size_t> recreated;
  if (recreate_any) {
    try {
      std::vector<TpuNode> all;
      for (size_t slice = 0; slice < now.size(); ++slice) {
        const NodeNow& n = now[slice];
        std::optional<TpuCreate> create = SpecCreateFor(plan.spec.pod, n.query);
        if (create && ToRecreate(records, plan, n)) {
          all.push_back(RecreateSlice(records, plan, slice, *create, wait));
          recreated.push_back(slice);
        } else {
          all.push_back(n.node.value_or(TpuNode{}));
        }
      }
      nodes.Forget();
      if (!wait_any) moved = PointPodAtNodes(plan.pod, all);
    } catch (const Error& e) {
      Say(e.what());
      return e.code();
    }
  }
  if (wait_any) {
    auto changed = WaitUntilReadyAgain(plan, wait);
    if (const ExitCode* give_up = std::get_if<ExitCode>(&changed)) return *give_up;
    moved = std::get<std::vector<int>>(changed);
  }
  try {
    for (size_t slice : recreated) PinRecreatedSlice(plan, slice);
  } catch (const Error& e) {
    Say(e.what());
    return e.code();
  }
  for (int64_t id : preemptions) records.SetPreemptionBack(id);
  if (!moved.empty()) store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
  return AttemptReason::kRecoveryAfterPreemption;
}

// The nodes that are gone without podrun or the API saying why: deleted by someone else.
std::vector<std::string> DeletedByOthers(RecoveryRecords& records, const AttemptPlan& plan,
                                         const std::vector<NodeNow>& now) {
  std::vector<std::string> out;
  for (const NodeNow& n : now) {
    if (n.deleted() && !PodrunIsRecreating(records, plan.job.id, n.query)) {
      out.push_back(n.query.name);
    }
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

bool StartFailedOnAGoneNode(JobStore& store, const AttemptPlan& plan, NodeStates& nodes) {
  if (!plan.pod.cloud_tpu || plan.pod.tpu_nodes.empty()) return false;
  RecoveryRecords records(store);
  try {
    nodes.Forget();
    for (const NodeNow& n : nodes.All()) {
      if (SpecCreateCovers(plan.spec.pod, n.query) && ToRecreate(records, plan, n)) return true;
    }
  } catch (const Error&) {
  }
  return false;
}

std::variant<AttemptReason, ExitCode> PrepareRestart(JobStore& store, AttemptPlan& plan,
                                                     int restart, NodeStates& nodes,
                                                     const TpuWait& wait) {
  RecoveryRecords records(store);
  const bool tpu = plan.pod.cloud_tpu && !plan.pod.tpu_nodes.empty();
  if (tpu) {
    try {
      // A node the gang's followers just saw gone stays gone (it never comes back by itself):
      // that answer serves. Otherwise gcloud is asked afresh.
      std::vector<NodeNow> now = nodes.All();
      auto gone = [&] {
        return std::any_of(now.begin(), now.end(), [&](const NodeNow& n) {
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
          records.SetRecovering(plan.job.id,
                                fmt::format("asking gcloud what happened to w{}", lost.front()));
          std::optional<bool> said = WaitForTheApiToSay(plan, lost, nodes, wait);
          if (!said) return ExitCode::kInterrupted;
          if (*said) now = nodes.All();
        }
      }
      if (const auto deleted = DeletedByOthers(records, plan, now); !deleted.empty()) {
        Say(
            fmt::format("TPU node {} no longer exists and podrun did not delete it: someone "
                        "removed it, so podrun does not bring it back; the run ends here "
                        "(podrun up SPEC creates it again, then podrun rerun {})",
                        deleted.front(), plan.job.id));
        return ExitCode::kFailed;
      }
      if (gone()) return RecoverGoneNodes(store, plan, std::move(now), nodes, wait);
    } catch (const Error& e) {
      Say(e.what());
      return e.code();
    }
  }
  const auto backoff = RestartBackoff(restart);
  records.SetRecovering(plan.job.id, fmt::format("restarting the gang in {} s (restart {} of {})",
                                                 backoff.count(), restart, plan.spec.restarts));
  Say(fmt::format("restarting the whole gang in {} s (restart {} of {}; Ctrl-C to give up)",
                  backoff.count(), restart, plan.spec.restarts));
  if (!wait(backoff)) return ExitCode::kInterrupted;
  // A node that is not READY for another reason (e.g. CREATING while a queued resource
  // recreates it) is waited for, and the gang restarts at its current addresses.
  auto moved = WaitUntilReadyAgain(plan, wait);
  if (const ExitCode* give_up = std::get_if<ExitCode>(&moved)) return *give_up;
  if (!std::get<std::vector<int>>(moved).empty()) {
    store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
  }
  return RestartReasonAfter(store.GetAttempt(plan.job.id, plan.attempt).ended_by);
}

}  // namespace podrun
