// ProgressPattern: the spec's `progress:` (docs/reference.md, "Seeing why"), the regex whose one
// capture group is a worker's step in a line of its output. RE2: matching time is linear in the
// line, whatever the pattern, so a hostile or careless pattern cannot stall the launcher.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace podrun {

// The default pattern: "step 12", "Step: 12", "step=12", "Step 12/1000", "global_step 12",
// "train_step 12", "iter 12", "Iteration 12", any case.
inline constexpr const char* kDefaultProgressPattern =
    R"((?i)\b(?:global[_ ]|train[_ ])?(?:step|iter|iteration)\b\s*[:=#]?\s*(\d+))";

class ProgressPattern {
 public:
  // Compiles `pattern` (empty: off, matches nothing). Throws std::invalid_argument with RE2's
  // reason when it does not compile or has not exactly one capture group.
  explicit ProgressPattern(const std::string& pattern);
  ~ProgressPattern();
  ProgressPattern(const ProgressPattern&) = delete;
  ProgressPattern& operator=(const ProgressPattern&) = delete;

  bool enabled() const { return re_ != nullptr; }
  const std::string& pattern() const { return pattern_; }
  // The step in `line` (the first match's group, as a non-negative integer); nullopt when it
  // does not match, the group is not a number, or it does not fit in 63 bits.
  std::optional<int64_t> Step(std::string_view line) const;

 private:
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
};

}  // namespace podrun
