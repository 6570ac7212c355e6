// NodeStates: what gcloud says of a pod's TPU nodes now (docs/reference.md, "Provisioning and
// recovery"), asked at most once per node per `max_age` however many of its workers were lost,
// so that 4 lost workers of one node cost one `gcloud describe`, and a lost worker's reason is
// said once. Thread-safe: the gang's follower threads ask it concurrently; gcloud runs without
// the lock held by another node's question.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/connect/pod.h"

namespace podrun {

// A TPU node as gcloud describes it now, with its queued resource when it has one.
struct NodeNow {
  TpuQuery query;
  std::optional<TpuNode> node;       // nullopt: gcloud says NOT_FOUND
  std::optional<QueuedResource> qr;  // asked only for queued nodes

  // PREEMPTED or TERMINATED (its queued resource SUSPENDED or FAILED): only a recreation
  // brings it back.
  bool preempted() const;
  // Neither the node nor its queued resource exists any more.
  bool deleted() const { return !node && !qr; }
  bool ready() const { return node && node->state == "READY"; }
  // "PREEMPTED", "SUSPENDED", "deleted", "CREATING", ...
  std::string state() const;
};

class NodeStates {
 public:
  // `pod`'s nodes (none unless discovered with --tpu); `queued`: ask for queued resources too.
  // The pod is copied: its nodes do not change while this object lives.
  NodeStates(const Pod& pod, std::filesystem::path cache_dir, std::chrono::seconds max_age,
             bool queued);

  // Slice `slice`'s node: the answer younger than max_age, else gcloud's now. Throws
  // Error(kUnreachable) when gcloud cannot answer.
  NodeNow Node(size_t slice);
  // Every node, in slice order, as Node().
  std::vector<NodeNow> All();
  // Drops every answer: the next question asks gcloud (a new poll, or a node just recreated).
  void Forget();

  // For worker `index`, lost: "preempted: TPU node NAME is PREEMPTED (gcloud)" or "TPU node NAME
  // is STATE, not READY (gcloud)" when its node is not READY; nullopt when it is READY, gcloud
  // cannot answer, or the pod has no TPU nodes.
  std::optional<std::string> LostWorkerReason(int index);

  // The number of gcloud describes of nodes made so far (for tests and benchmarks).
  int asked() const;

 private:
  struct Answer {
    std::chrono::steady_clock::time_point at;
    NodeNow now;
  };

  std::vector<TpuQuery> nodes_;
  std::vector<int> slice_of_;  // worker index -> slice
  std::filesystem::path cache_dir_;
  std::chrono::seconds max_age_;
  bool queued_;
  mutable std::mutex mutex_;
  std::map<size_t, Answer> answers_;                      // guarded by mutex_
  std::map<size_t, std::unique_ptr<std::mutex>> asking_;  // one question per node at a time
  int asked_ = 0;                                         // guarded by mutex_
};

}  // namespace podrun
