// See node_states.h.
#include "launcher/recovery/node_states.h"

#include <fmt/format.h>

#include <exception>

#include "launcher/pod/tpu_gcloud.h"
#include "launcher/recovery/tpu_provisioner.h"

namespace podrun {

bool NodeNow::preempted() const { return NeedsRecreation(node, qr); }

std::string NodeNow::state() const {
  if (!node) return qr ? qr->state : "deleted";
  if (NeedsRecreation(std::nullopt, qr)) return qr->state;
  return node->state.empty() ? "in no state" : node->state;
}

NodeStates::NodeStates(const Pod& pod, std::filesystem::path cache_dir,
                       std::chrono::seconds max_age, bool queued)
    : cache_dir_(std::move(cache_dir)), max_age_(max_age), queued_(queued) {
  if (pod.cloud_tpu) nodes_ = pod.tpu_nodes;
  for (const PodWorker& w : pod.workers) {
    if (slice_of_.size() <= static_cast<size_t>(w.index)) slice_of_.resize(w.index + 1, 0);
    slice_of_[static_cast<size_t>(w.index)] = w.slice;
  }
  for (size_t i = 0; i < nodes_.size(); ++i) asking_[i] = std::make_unique<std::mutex>();
}

NodeNow NodeStates::Node(size_t slice) {
  std::mutex& asking = *asking_.at(slice);
  std::lock_guard one_question(asking);  // others asking about this node wait for its answer
  {
    std::lock_guard lock(mutex_);
    auto it = answers_.find(slice);
    if (it != answers_.end() && std::chrono::steady_clock::now() - it->second.at < max_age_) {
      return it->second.now;
    }
  }
  NodeNow now{nodes_[slice], FindTpuNode(nodes_[slice]), std::nullopt};
  if (queued_ || (now.node && !now.node->queued_resource.empty())) {
    now.qr = FindQueuedResource(nodes_[slice]);
  }
  ForgetCachedTpuNode(nodes_[slice], cache_dir_);  // a later discovery asks afresh too
  std::lock_guard lock(mutex_);
  ++asked_;
  answers_[slice] = {std::chrono::steady_clock::now(), now};
  return now;
}

std::vector<NodeNow> NodeStates::All() {
  std::vector<NodeNow> out;
  for (size_t i = 0; i < nodes_.size(); ++i) out.push_back(Node(i));
  return out;
}

void NodeStates::Forget() {
  std::lock_guard lock(mutex_);
  answers_.clear();
}

std::optional<std::string> NodeStates::LostWorkerReason(int index) {
  if (index < 0 || static_cast<size_t>(index) >= slice_of_.size()) return std::nullopt;
  const auto slice = static_cast<size_t>(slice_of_[static_cast<size_t>(index)]);
  if (slice >= nodes_.size()) return std::nullopt;
  NodeNow now;
  try {
    now = Node(slice);
  } catch (const std::exception&) {
    return std::nullopt;  // no answer: the loss is reported as it is
  }
  if (now.ready()) return std::nullopt;
  if (now.node && now.node->state == "PREEMPTED") {
    return fmt::format("preempted: TPU node {} is PREEMPTED (gcloud)", now.query.name);
  }
  return fmt::format("TPU node {} is {}, not READY (gcloud)", now.query.name, now.state());
}

int NodeStates::asked() const {
  std::lock_guard lock(mutex_);
  return asked_;
}

}  // namespace podrun
