// See progress_pattern.h.
#include "proto/progress_pattern.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#include <charconv>
#include <cstring>
#include <stdexcept>

namespace podrun {
namespace {

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

namespace {

bool HasDigit(std::string_view text) {
  for (const char c : text) {
    if (c >= '0' && c <= '9') return true;  // real output has one early: the loop ends soon
  }
  return false;
}

// Whether every byte is ASCII: eight bytes at a time.
bool IsAscii(std::string_view text) {
  size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    if (word & 0x8080808080808080ULL) return false;
  }
  for (; i < text.size(); ++i) {
    if (static_cast<unsigned char>(text[i]) >= 0x80) return false;
  }
  return true;
}

char AsciiLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

// Whether ASCII `text` holds `atom` (lowercase), ignoring ASCII case: memchr for the atom's first
// byte in either case, then the rest compared.
bool ContainsIgnoringCase(std::string_view text, std::string_view atom) {
  if (atom.empty()) return true;
  if (atom.size() > text.size()) return false;
  const char first = atom[0];
  const char upper = first >= 'a' && first <= 'z' ? static_cast<char>(first - ('a' - 'A')) : first;
  for (const char c : {first, upper}) {
    const char* p = text.data();
    const char* const last = text.data() + text.size() - atom.size();
    while (p <= last) {
      p = static_cast<const char*>(std::memchr(p, c, static_cast<size_t>(last - p) + 1));
      if (p == nullptr) break;
      size_t k = 1;
      while (k < atom.size() && AsciiLower(p[k]) == atom[k]) ++k;
      if (k == atom.size()) return true;
      ++p;
    }
    if (upper == first) break;
  }
  return false;
}

}  // namespace

bool ProgressPattern::MayMatch(std::string_view text) const {
  if (!re_ || !HasDigit(text)) return false;
  // Other bytes: their lowercase is Unicode's, not ASCII's; the regex decides.
  if (!filter_ || !IsAscii(text)) return true;
  std::vector<int> found;
  for (size_t i = 0; i < atoms_.size(); ++i) {
    if (ContainsIgnoringCase(text, atoms_[i])) found.push_back(static_cast<int>(i));
  }
  // No atom: no match (a pattern that could match without one has no atoms, and no filter_).
  // Most lines end here, without asking the filter (which allocates).
  if (found.empty()) return false;
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
