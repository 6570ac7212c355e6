// See node_wait.h.
#include "launcher/recovery/node_wait.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>

#include "launcher/base/error.h"
#include "launcher/output/say.h"
#include "launcher/recovery/tpu_provisioner.h"
#include "proto/write_all.h"

namespace podrun {

std::chrono::seconds ReadyPollInterval() { return TpuPollInterval(std::chrono::seconds(30)); }

namespace {

// The nodes of `pod` as gcloud describes them now, in slice order.
std::vector<TpuNode> DescribeNodes(const Pod& pod, const std::filesystem::path& cache_dir) {
  std::vector<TpuNode> nodes;
  for (const TpuQuery& query : pod.tpu_nodes) {
    nodes.push_back(DescribeTpuNode(query, cache_dir, /*refresh=*/true));
  }
  return nodes;
}

}  // namespace

std::vector<int> PointPodAtNodes(Pod& pod, const std::vector<TpuNode>& nodes) {
  std::vector<int> changed;
  for (size_t slice = 0; slice < nodes.size(); ++slice) {
    const TpuNode& node = nodes[slice];
    size_t k = 0;
    for (PodWorker& w : pod.workers) {
      if (static_cast<size_t>(w.slice) != slice) continue;
      if (k >= node.endpoints.size()) break;
      const TpuEndpoint& e = node.endpoints[k++];
      const std::string host = pod.internal_ip || !e.external_ip ? e.internal_ip : *e.external_ip;
      if (w.host.host != host || w.peer_address != e.internal_ip) changed.push_back(w.index);
      w.host.host = host;
      w.peer_address = e.internal_ip;
    }
    const auto before = static_cast<size_t>(
        std::count_if(pod.workers.begin(), pod.workers.end(),
                      [&](const PodWorker& w) { return static_cast<size_t>(w.slice) == slice; }));
    if (node.endpoints.size() != before) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("tpu {} came back with {} workers, not {}: nothing was restarted",
                              pod.tpu_nodes[slice].name, node.endpoints.size(), before));
    }
  }
  return changed;
}

std::optional<std::vector<int>> WaitForReadyNodes(
    Pod& pod, const std::filesystem::path& cache_dir, std::chrono::seconds poll,
    const std::function<bool(std::chrono::seconds)>& wait) {
  if (!pod.cloud_tpu || pod.tpu_nodes.empty()) return std::vector<int>{};
  std::string waiting_for;  // the state last announced, not repeated at every poll
  while (true) {
    std::vector<TpuNode> nodes = DescribeNodes(pod, cache_dir);
    std::string not_ready;
    bool gone = false;  // a node PREEMPTED or TERMINATED: it comes back only when created again
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].state == "READY") continue;
      gone = gone || nodes[i].state == "PREEMPTED" || nodes[i].state == "TERMINATED";
      if (!not_ready.empty()) not_ready += ", ";
      not_ready += fmt::format("{} is {}", pod.tpu_nodes[i].name,
                               nodes[i].state.empty() ? "in no state" : nodes[i].state);
    }
    if (not_ready.empty()) {
      std::vector<int> changed = PointPodAtNodes(pod, nodes);
      if (!waiting_for.empty()) {
        Say(fmt::format("TPU {} READY again{}", pod.tpu_nodes.size() == 1 ? "node" : "nodes",
                        changed.empty() ? "" : ", at new addresses"));
      }
      return changed;
    }
    if (not_ready != waiting_for) {
      Say(
          fmt::format("waiting for the pod to be READY again: TPU node {} (gcloud, "
                      "asked every {} s; Ctrl-C to give up){}",
                      not_ready, poll.count(),
                      pod.tpu_nodes.size() == 1 && gone
                          ? "; a preempted node comes back only when created again: add "
                            "pod.create (accelerator_type, version, spot) to the spec and podrun "
                            "recreates it"
                          : ""));
      waiting_for = not_ready;
    }
    if (!wait(poll)) return std::nullopt;
  }
}

}  // namespace podrun
