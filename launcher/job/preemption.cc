// See preemption.h.
#include "launcher/job/preemption.h"

#include <fmt/format.h>

#include <exception>

namespace podrun {

std::optional<std::string> NodeStateOfLostWorker(const Pod& pod, int index,
                                                 const std::filesystem::path& cache_dir) {
  if (!pod.cloud_tpu || index < 0 || static_cast<size_t>(index) >= pod.workers.size()) {
    return std::nullopt;
  }
  const auto slice = static_cast<size_t>(pod.workers[static_cast<size_t>(index)].slice);
  if (slice >= pod.tpu_nodes.size()) return std::nullopt;
  const TpuQuery& query = pod.tpu_nodes[slice];
  TpuNode node;
  try {
    node = DescribeTpuNode(query, cache_dir, /*refresh=*/true);
  } catch (const std::exception&) {
    return std::nullopt;  // no answer: the loss is reported as it is
  }
  if (node.state == "READY") return std::nullopt;
  const std::string state = node.state.empty() ? "in no state" : node.state;
  if (node.state == "PREEMPTED") {
    return fmt::format("preempted: TPU node {} is PREEMPTED (gcloud)", query.name);
  }
  return fmt::format("TPU node {} is {}, not READY (gcloud)", query.name, state);
}

}  // namespace podrun
