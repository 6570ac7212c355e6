// See source_states.h.
#include "launcher/recovery/source_states.h"

#include <fmt/format.h>

#include <exception>

namespace podrun {

SourceStates::SourceStates(const Pod& pod, std::filesystem::path cache_dir,
                           std::chrono::seconds max_age)
    : cache_dir_(std::move(cache_dir)), max_age_(max_age) {
  for (const PodSourceRef& ref : PodSourcesOf(pod)) {
    sources_.push_back(MakePodSource(ref, cache_dir_));
  }
  for (const PodWorker& w : pod.workers) {
    if (slice_of_.size() <= static_cast<size_t>(w.index)) slice_of_.resize(w.index + 1, 0);
    slice_of_[static_cast<size_t>(w.index)] = w.slice;
  }
  for (size_t i = 0; i < sources_.size(); ++i) asking_[i] = std::make_unique<std::mutex>();
}

SourceNow SourceStates::Slice(size_t slice) {
  std::mutex& asking = *asking_.at(slice);
  std::lock_guard one_question(asking);  // others asking about this slice wait for its answer
  {
    std::lock_guard lock(mutex_);
    auto it = answers_.find(slice);
    if (it != answers_.end() && std::chrono::steady_clock::now() - it->second.at < max_age_) {
      return it->second.now;
    }
  }
  SourceNow now = sources_[slice]->Now();
  std::lock_guard lock(mutex_);
  ++asked_;
  answers_[slice] = {std::chrono::steady_clock::now(), now};
  return now;
}

std::vector<SourceNow> SourceStates::All() {
  std::vector<SourceNow> out;
  for (size_t i = 0; i < sources_.size(); ++i) out.push_back(Slice(i));
  return out;
}

void SourceStates::Forget() {
  std::lock_guard lock(mutex_);
  answers_.clear();
}

void SourceStates::MoveSlice(size_t slice, const PodSourceRef& where) {
  std::lock_guard one_question(*asking_.at(slice));  // nobody asks the old source meanwhile
  std::unique_ptr<PodSource> moved = MakePodSource(where, cache_dir_);
  std::lock_guard lock(mutex_);
  sources_[slice] = std::move(moved);
  answers_.erase(slice);
}

std::optional<std::string> SourceStates::LostWorkerReason(int index) {
  if (index < 0 || static_cast<size_t>(index) >= slice_of_.size()) return std::nullopt;
  const auto slice = static_cast<size_t>(slice_of_[static_cast<size_t>(index)]);
  if (slice >= sources_.size()) return std::nullopt;
  SourceNow now;
  try {
    now = Slice(slice);
  } catch (const std::exception&) {
    return std::nullopt;  // no answer: the loss is reported as it is
  }
  if (now.ready()) return std::nullopt;
  if (now.preempted()) return fmt::format("preempted: {} (gcloud)", now.why);
  return fmt::format("{} (gcloud)", now.why);
}

int SourceStates::asked() const {
  std::lock_guard lock(mutex_);
  return asked_;
}

}  // namespace podrun
