// StepThinning: one worker's step samples for an attempt, kept to at most kMaxSamples however
// long it runs (docs/design.md decision 19). A sample is kept when it comes at least `spacing`
// after the last kept one; when the samples reach the cap, every other one is dropped and the
// spacing doubles. So a run of any length keeps samples evenly spread over its whole time, and
// the record grows with attempts and workers, never with run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace podrun::agent {

// A worker printed `step` at `time_ns` (its wall clock).
struct StepPoint {
  int64_t time_ns = 0;
  int64_t step = 0;
  bool operator==(const StepPoint&) const = default;
};

class StepThinning {
 public:
  static constexpr size_t kMaxSamples = 256;
  static constexpr int64_t kFirstSpacingNs = 1'000'000'000;  // 1 s

  // `step` was printed at `time_ns`. Samples out of time order are ignored. Returns true when
  // the samples changed.
  bool Add(int64_t time_ns, int64_t step);

  const std::vector<StepPoint>& samples() const { return samples_; }
  int64_t spacing_ns() const { return spacing_ns_; }

 private:
  std::vector<StepPoint> samples_;
  int64_t spacing_ns_ = kFirstSpacingNs;
};

}  // namespace podrun::agent
