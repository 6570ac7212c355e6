// See step_thinning.h.
#include "launcher/insight/step_thinning.h"

namespace podrun {

void StepThinning::Add(int64_t time_ns, int64_t step) {
  if (!samples_.empty()) {
    if (time_ns < samples_.back().time_ns + spacing_ns_) return;
  }
  samples_.push_back({time_ns, step});
  if (samples_.size() < kMaxSamples) return;
  // Keep the even ones (the first stays): half as many, twice as far apart.
  size_t kept = 0;
  for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
  samples_.resize(kept);
  spacing_ns_ *= 2;
  thinned_ = true;
}

StepSamplesUpdate StepThinning::TakeChanges(int worker) {
  // Nothing yet: nothing to replace either (the first samples will).
  if (samples_.empty()) return {.worker = worker, .replace = false, .samples = {}};
  StepSamplesUpdate update{.worker = worker, .replace = thinned_, .samples = {}};
  const size_t from = thinned_ ? 0 : unsaved_from_;
  update.samples.assign(samples_.begin() + static_cast<std::ptrdiff_t>(from), samples_.end());
  unsaved_from_ = samples_.size();
  thinned_ = false;
  return update;
}

}  // namespace podrun
