// See progress_pattern.h.
#include "proto/progress_pattern.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <charconv>
#include <stdexcept>

namespace podrun {
namespace {

constexpr size_t kMaxFilteredLineBytes = 4096;  // longer lines skip the literal prefilter

RE2::Options PatternOptions() {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(1 << 20);  // bounded: a pathological pattern fails to compile instead
  return options;
}

}  // namespace

ProgressPattern::ProgressPattern(const std::string& pattern) : pattern_(pattern) {
  if (pattern.empty()) return;
  auto re = std::make_unique<RE2>(pattern, PatternOptions());
  if (!re->ok()) throw std::invalid_argument("bad regex: " + re->error());
  if (re->NumberOfCapturingGroups() != 1) {
    throw std::invalid_argument("the regex needs exactly one capture group (the step), it has " +
                                std::to_string(re->NumberOfCapturingGroups()));
  }
  re_ = std::move(re);
  // The literal prefilter: RE2's own analysis of which strings every match contains.
  auto filter = std::make_unique<re2::FilteredRE2>(/*min_atom_len=*/2);
  int id = 0;
  if (filter->Add(pattern, PatternOptions(), &id) == RE2::NoError) {
    std::vector<std::string> atoms;
    filter->Compile(&atoms);
    if (!atoms.empty()) {
      atoms_ = std::move(atoms);
      filter_ = std::move(filter);
    }
  }
}

ProgressPattern::~ProgressPattern() = default;

bool ProgressPattern::MayMatch(std::string_view line) const {
  // One pass: a digit? any byte outside ASCII? and the line lowercased for the atoms.
  bool digit = false, ascii = true;
  char lower[kMaxFilteredLineBytes];
  const bool filtered = filter_ && line.size() <= sizeof lower;
  for (size_t i = 0; i < line.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    digit |= c >= '0' && c <= '9';
    ascii &= c < 0x80;
    if (filtered) lower[i] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  }
  if (!digit) return false;
  // Other bytes: their lowercase is Unicode's, not ASCII's; the regex decides.
  if (!filtered || !ascii) return true;
  const std::string_view text(lower, line.size());
  std::vector<int> found;
  for (size_t i = 0; i < atoms_.size(); ++i) {
    if (text.find(atoms_[i]) != std::string_view::npos) found.push_back(static_cast<int>(i));
  }
  std::vector<int> passed;
  filter_->AllPotentials(found, &passed);
  return !passed.empty();
}

std::optional<int64_t> ProgressPattern::Step(std::string_view line) const {
  if (!re_ || !MayMatch(line)) return std::nullopt;
  return StepUnfiltered(line);
}

std::optional<int64_t> ProgressPattern::StepUnfiltered(std::string_view line) const {
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
