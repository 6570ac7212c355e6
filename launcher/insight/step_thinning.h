// StepThinning: one worker's step samples for an attempt, kept to at most kMaxSamples however
// long it runs (docs/design.md decision 19). A sample is kept when it comes at least `spacing`
// after the last kept one; when the samples reach the cap, every other one is dropped and the
// spacing doubles. So a run of any length keeps samples evenly spread over its whole time, and
// the record grows with attempts and workers, never with run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "launcher/store/run_records.h"

namespace podrun {

class StepThinning {
 public:
  static constexpr size_t kMaxSamples = 256;
  static constexpr int64_t kFirstSpacingNs = 1'000'000'000;  // 1 s

  // `step` was printed at `time_ns`. Samples out of time order are ignored.
  void Add(int64_t time_ns, int64_t step);

  const std::vector<StepSample>& samples() const { return samples_; }
  int64_t spacing_ns() const { return spacing_ns_; }

  // What changed since the last call: the samples kept since then (replace = false), or all of
  // them after a thinning and on the first call (replace = true: a follower that starts again
  // reads the log from its start, and its samples replace those of the follower before it).
  // Empty samples and replace = false: nothing new.
  StepSamplesUpdate TakeChanges(int worker);

 private:
  std::vector<StepSample> samples_;
  int64_t spacing_ns_ = kFirstSpacingNs;
  size_t unsaved_from_ = 0;  // samples_[unsaved_from_..] are not taken yet
  bool thinned_ = true;      // since the last TakeChanges (true before the first)
};

}  // namespace podrun
