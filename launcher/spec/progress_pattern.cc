// See progress_pattern.h.
#include "launcher/spec/progress_pattern.h"

#include <re2/re2.h>

#include <charconv>
#include <stdexcept>

namespace podrun {

ProgressPattern::ProgressPattern(const std::string& pattern) : pattern_(pattern) {
  if (pattern.empty()) return;
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);  // bounded: a pathological pattern fails to compile instead
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok()) throw std::invalid_argument("bad regex: " + re->error());
  if (re->NumberOfCapturingGroups() != 1) {
    throw std::invalid_argument("the regex needs exactly one capture group (the step), it has " +
                                std::to_string(re->NumberOfCapturingGroups()));
  }
  re_ = std::move(re);
}

ProgressPattern::~ProgressPattern() = default;

std::optional<int64_t> ProgressPattern::Step(std::string_view line) const {
  if (!re_) return std::nullopt;
  re2::StringPiece group;
  if (!RE2::PartialMatch(re2::StringPiece(line.data(), line.size()), *re_, &group)) {
    return std::nullopt;
  }
  int64_t step = 0;
  const char* end = group.data() + group.size();
  auto [ptr, ec] = std::from_chars(group.data(), end, step);
  if (ec != std::errc() || ptr != end || step < 0 || group.empty()) return std::nullopt;
  return step;
}

}  // namespace podrun
