// See step_thinning.h.
#include "worker/supervisor/step_thinning.h"

namespace podrun::agent {

bool StepThinning::Add(int64_t time_ns, int64_t step) {
  if (!samples_.empty()) {
    if (time_ns < samples_.back().time_ns + spacing_ns_) return false;
  }
  samples_.push_back({time_ns, step});
  if (samples_.size() < kMaxSamples) return true;
  // Keep the even ones (the first stays): half as many, twice as far apart.
  size_t kept = 0;
  for (size_t i = 0; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
  samples_.resize(kept);
  spacing_ns_ *= 2;
  return true;
}

}  // namespace podrun::agent
