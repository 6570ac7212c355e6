// ProgressPattern: the spec's `progress:` (docs/reference.md, "Seeing why"), the regex whose one
// capture group is a worker's step in a line of its output. The launcher checks it when it reads
// the spec; each worker's supervisor applies it to every line the job prints. RE2: matching time
// is linear in the line, whatever the pattern, so a hostile or careless pattern cannot stall
// either side.
//
// Before the regex, a prefilter that never changes what matches: a line with no ASCII digit has
// no step (the group must read as a decimal number), and a line of ASCII text that contains none
// of the literal strings RE2 proves every match needs (re2::FilteredRE2's atoms, compared case-
// insensitively: "step" or "iter" for the default) is not searched. Lines with other bytes go to
// the regex whenever they have a digit.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
class FilteredRE2;
}  // namespace re2

namespace podrun {

// The default pattern: "step 12", "Step: 12", "step=12", "Step 12/1000", "global_step 12",
// "train_step 12", "iter 12", "Iteration 12" (MaxText's "completed step: 12, ..." among them), any
// case; a tqdm bar whose description starts with "train" ("train:  12%|█▏  | 120/1000 [...",
// levanter's); and the step of CLU's metric writer ("logging_writer.py:35] [400] ...", the flax
// examples').
inline constexpr const char* kDefaultProgressPattern =
    R"((?i)(?:\b(?:global[_ ]|train[_ ])?(?:step|iter|iteration)\b\s*[:=#]?\s*|\btrain\w*:\s*\d+%\|[^|]*\|\s*|logging_writer\.py:\d+\]\s*\[)(\d+))";

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
  // does not match, the group is not a number, or it does not fit in 63 bits. Prefiltered.
  std::optional<int64_t> Step(std::string_view line) const;
  // The same without the prefilter (the regex on every line): for tests that compare the two.
  std::optional<int64_t> StepUnfiltered(std::string_view line) const;
  // The lowercase strings of which a line of ASCII text must contain one to match (empty: no
  // such test, every line with a digit is searched).
  const std::vector<std::string>& atoms() const { return atoms_; }
  // False when no line of `text` can hold a match (the prefilter above, on the whole text at
  // once: one pass for a chunk of many lines); true when one may. Any thread.
  bool MayMatch(std::string_view text) const;

 private:
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
  std::unique_ptr<re2::FilteredRE2> filter_;  // null: no literal prefilter
  std::vector<std::string> atoms_;
};

}  // namespace podrun
