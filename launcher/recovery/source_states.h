// SourceStates: what gcloud says of a pod's slices now (docs/reference.md, "Provisioning and
// recovery"), through each slice's PodSource (a TPU node, a MIG slice: this class never asks
// which), asked at most once per slice per `max_age` however many of its workers were lost, so
// that 4 lost workers of one slice cost one question, and a lost worker's reason is said once.
// Thread-safe: the gang's follower threads ask it concurrently; gcloud runs without the lock
// held by another slice's question.
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
#include "launcher/pod/pod_source.h"

namespace podrun {

class SourceStates {
 public:
  // `pod`'s slices (none unless discovered with --tpu or --mig). The pod is copied: its slices
  // do not change while this object lives.
  SourceStates(const Pod& pod, std::filesystem::path cache_dir, std::chrono::seconds max_age);

  // Slice `slice`: the answer younger than max_age, else gcloud's now. Throws
  // Error(kUnreachable) when gcloud cannot answer.
  SourceNow Slice(size_t slice);
  // Every slice, in slice order, as Slice().
  std::vector<SourceNow> All();
  // Drops every answer: the next question asks gcloud (a new poll, or a slice just recreated).
  void Forget();
  // Slice `slice` lives at `where` from now on (recreated in another of its zones).
  void MoveSlice(size_t slice, const PodSourceRef& where);
  // The number of slices.
  size_t size() const { return sources_.size(); }

  // For worker `index`, lost: "preempted: TPU node NAME is PREEMPTED (gcloud)", "preempted: MIG
  // slice NAME: instance I is TERMINATED (gcloud)", or "WHY, not READY (gcloud)" when its slice
  // cannot run a job; nullopt when it can, gcloud cannot answer, or the pod has no slices.
  std::optional<std::string> LostWorkerReason(int index);

  // The number of questions to gcloud made so far (for tests and benchmarks).
  int asked() const;

 private:
  struct Answer {
    std::chrono::steady_clock::time_point at;
    SourceNow now;
  };

  std::filesystem::path cache_dir_;
  std::vector<std::unique_ptr<PodSource>> sources_;  // replaced under asking_[slice] and mutex_
  std::vector<int> slice_of_;                        // worker index -> slice
  std::chrono::seconds max_age_;
  mutable std::mutex mutex_;
  std::map<size_t, Answer> answers_;                      // guarded by mutex_
  std::map<size_t, std::unique_ptr<std::mutex>> asking_;  // one question per slice at a time
  int asked_ = 0;                                         // guarded by mutex_
};

}  // namespace podrun
