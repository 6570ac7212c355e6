// What happens between a failed attempt and the next (see recovery.h).
#include "launcher/attempt/recovery.h"

#include <fmt/format.h>

#include <algorithm>

#include "launcher/attempt/preemption.h"
#include "launcher/attempt/restarts.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/pod/tcp_probe.h"

namespace podrun {
namespace {

// A TPU node as gcloud describes it now, with its queued resource when it has one.
struct NodeNow {
  TpuQuery query;
  std::optional<TpuNode> node;
  std::optional<QueuedResource> qr;

  bool gone() const { return NeedsRecreation(node, qr) || !node; }
  std::string state() const {
    if (!node) return qr ? qr->state : "deleted";
    if (NeedsRecreation(std::nullopt, qr)) return qr->state;
    return node->state.empty() ? "in no state" : node->state;
  }
};

std::vector<NodeNow> DescribeNow(const Pod& pod, bool queued) {
  std::vector<NodeNow> out;
  for (const TpuQuery& q : pod.tpu_nodes) {
    NodeNow n{q, FindTpuNode(q), std::nullopt};
    if (queued || (n.node && !n.node->queued_resource.empty())) n.qr = FindQueuedResource(q);
    out.push_back(std::move(n));
  }
  return out;
}

// The workers of the attempt that were lost (their agents out of reach).
std::vector<int> LostWorkers(JobStore& store, const AttemptPlan& plan) {
  std::vector<int> lost;
  for (const WorkerRecord& w : store.Workers(plan.job.id, plan.attempt)) {
    if (w.state == WorkerState::kLost) lost.push_back(w.index);
  }
  return lost;
}

// A worker was lost while its node reads READY: asks gcloud every poll until a node is gone
// (true) or every lost worker answers on its SSH port again (false). nullopt: given up.
std::optional<bool> WaitForTheApiToSay(const AttemptPlan& plan, const std::vector<int>& lost,
                                       bool queued, const TpuWait& wait) {
  const auto poll = ReadyPollInterval();
  bool said = false;
  for (;;) {
    for (const NodeNow& n : DescribeNow(plan.pod, queued)) {
      if (n.gone()) return true;
    }
    std::vector<std::string> hosts;
    for (int i : lost) hosts.push_back(plan.pod.workers[static_cast<size_t>(i)].host.host);
    const auto port = static_cast<uint16_t>(plan.pod.ssh.default_port.value_or(22));
    const auto probes = ProbeTcp(hosts, port, std::chrono::seconds(3));
    if (std::none_of(probes.begin(), probes.end(),
                     [](ProbeResult r) { return r == ProbeResult::kUnreachable; })) {
      return false;
    }
    if (!said) {
      Say(
          fmt::format("w{} lost while its TPU node still reads READY: asking gcloud every {} s "
                      "until it says what happened",
                      lost.front(), poll.count()));
      said = true;
    }
    if (!wait(poll)) return std::nullopt;
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

// Recreates (with pod.create) or waits for the gone nodes; records each as a preemption.
std::variant<std::string, ExitCode> RecoverGoneNodes(JobStore& store, AttemptPlan& plan,
                                                     std::vector<NodeNow> now,
                                                     const TpuWait& wait) {
  const std::optional<TpuCreate>& create = plan.spec.pod.create;
  std::vector<int64_t> records;
  for (const NodeNow& n : now) {
    if (!n.gone()) continue;
    Say(fmt::format("TPU node {} is {}{}", n.query.name, n.state(),
                    create ? ": deleting it and creating it again (pod.create)" : ""));
    records.push_back(store.AddPreemption(plan.job.id, {.id = 0,
                                                        .attempt = plan.attempt,
                                                        .node = n.query.name,
                                                        .state = n.state(),
                                                        .seen_ns = NowUnixNs(),
                                                        .back_ns = std::nullopt,
                                                        .recreated = create.has_value()}));
  }
  std::vector<TpuNode> nodes;
  if (create) {
    try {
      for (NodeNow& n : now) {
        if (n.gone()) {
          TpuProvisioner provisioner(n.query, *create, TpuPollInterval(std::chrono::seconds(10)),
                                     wait);
          n.node = provisioner.Recreate().node;
        }
        nodes.push_back(*n.node);
      }
    } catch (const Error& e) {
      Say(e.what());
      return e.code();
    }
  }
  std::vector<int> moved;
  if (create) {
    moved = PointPodAtNodes(plan.pod, nodes);
    ForgetPodHostKeys(plan.pod);
  } else {
    auto changed = WaitUntilReadyAgain(plan, wait);
    if (const ExitCode* give_up = std::get_if<ExitCode>(&changed)) return *give_up;
    moved = std::get<std::vector<int>>(changed);
  }
  for (int64_t id : records) store.SetPreemptionBack(id);
  if (!moved.empty()) store.SetJobHosts(plan.job.id, JobHostsOf(plan.pod, {}));
  return std::string("preemption");
}

}  // namespace

bool StartFailedOnAGoneNode(const AttemptPlan& plan) {
  if (!plan.pod.cloud_tpu || plan.pod.tpu_nodes.empty() || !plan.spec.pod.create) return false;
  try {
    for (const NodeNow& n : DescribeNow(plan.pod, plan.spec.pod.create->queued)) {
      if (n.gone()) return true;
    }
  } catch (const Error&) {
  }
  return false;
}

std::variant<std::string, ExitCode> PrepareRestart(JobStore& store, AttemptPlan& plan, int restart,
                                                   const TpuWait& wait) {
  const bool tpu = plan.pod.cloud_tpu && !plan.pod.tpu_nodes.empty();
  const bool queued = plan.spec.pod.create && plan.spec.pod.create->queued;
  if (tpu) {
    try {
      std::vector<NodeNow> now = DescribeNow(plan.pod, queued);
      bool gone = std::any_of(now.begin(), now.end(), [](const NodeNow& n) { return n.gone(); });
      if (!gone) {
        const std::vector<int> lost = LostWorkers(store, plan);
        if (!lost.empty()) {
          std::optional<bool> said = WaitForTheApiToSay(plan, lost, queued, wait);
          if (!said) return ExitCode::kInterrupted;
          if (*said) {
            now = DescribeNow(plan.pod, queued);
            gone = true;
          }
        }
      }
      if (gone) return RecoverGoneNodes(store, plan, std::move(now), wait);
    } catch (const Error& e) {
      Say(e.what());
      return e.code();
    }
  }
  const auto backoff = RestartBackoff(restart);
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
  const AttemptRecord ended = store.GetAttempt(plan.job.id, plan.attempt);
  return std::string(ended.cause.rfind("hung", 0) == 0 ? "hang" : "failure");
}

}  // namespace podrun
