// See progress_pattern.h.
#include "proto/progress_pattern.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <charconv>
#include <cstdint>
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

// Whether `atom` (lowercase) starts at `p`, ignoring ASCII case.
bool AtomAt(const char* p, std::string_view atom) {
  for (size_t k = 0; k < atom.size(); ++k) {
    if (AsciiLower(p[k]) != atom[k]) return false;
  }
  return true;
}

// Looks for `atoms` (lowercase, two bytes or more) in `text` ignoring ASCII case, in one pass:
// sixteen positions at a time are compared with every atom's first two bytes (a letter's case
// bit set on both sides), and only those candidates compared whole. Each time one more is found,
// asks `enough` with the indexes of those found so far, and stops when it says so (returns
// true). A memchr per occurrence of an atom's first letter was slow where that letter is
// frequent (base64, hex), and a pass per atom slow where one atom never comes (issue 35).
template <typename Enough>
bool FindAtoms(std::string_view text, const std::vector<std::string>& atoms, Enough enough) {
  constexpr size_t kMaxAtoms = 32;  // a bit each; more (no pattern has them) all say "maybe"
  uint32_t seen = 0;
  for (size_t a = 0; a < atoms.size() && a < kMaxAtoms; ++a) {
    if (atoms[a].size() < 2) seen |= 1U << a;  // none are (min_atom_len): "maybe"
  }
  const uint32_t all = atoms.size() >= kMaxAtoms ? ~0U : (1U << atoms.size()) - 1;
  if (atoms.size() > kMaxAtoms) seen = all;
  uint32_t asked = 0;  // what `enough` was last asked about
  auto ask = [&] {
    if (seen == asked) return false;
    asked = seen;
    std::vector<int> found;
    for (size_t a = 0; a < atoms.size(); ++a) {
      if (a >= kMaxAtoms || (seen & (1U << a)) != 0) found.push_back(static_cast<int>(a));
    }
    return enough(found);
  };
  auto check = [&](size_t at, size_t a) {
    if (atoms[a].size() <= text.size() - at && AtomAt(text.data() + at, atoms[a])) seen |= 1U << a;
  };
  if (ask()) return true;
  size_t i = 0;
#if defined(__SSE2__)
  struct Prefix {
    __m128i fold0, want0, fold1, want1;
  };
  std::array<Prefix, kMaxAtoms> prefixes;
  for (size_t a = 0; a < atoms.size() && a < kMaxAtoms; ++a) {
    if ((seen & (1U << a)) != 0) continue;
    auto fold = [](char c) { return _mm_set1_epi8(c >= 'a' && c <= 'z' ? 0x20 : 0); };
    prefixes[a] = {fold(atoms[a][0]), _mm_set1_epi8(atoms[a][0]), fold(atoms[a][1]),
                   _mm_set1_epi8(atoms[a][1])};
  }
  for (; i + 17 <= text.size() && seen != all; i += 16) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data() + i + 1));
    for (size_t a = 0; a < atoms.size(); ++a) {
      if ((seen & (1U << a)) != 0) continue;
      const Prefix& x = prefixes[a];
      const __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(v0, x.fold0), x.want0),
                                        _mm_cmpeq_epi8(_mm_or_si128(v1, x.fold1), x.want1));
      for (auto mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
           mask != 0 && (seen & (1U << a)) == 0; mask &= mask - 1) {
        check(i + static_cast<size_t>(__builtin_ctz(mask)), a);
      }
    }
    if (ask()) return true;
  }
#endif
  for (; i < text.size() && seen != all; ++i) {  // what is left, or every position without SSE2
    const char c = AsciiLower(text[i]);
    for (size_t a = 0; a < atoms.size(); ++a) {
      if ((seen & (1U << a)) == 0 && atoms[a][0] == c) check(i, a);
    }
    if (ask()) return true;
  }
  return false;
}

}  // namespace

bool ProgressPattern::MayMatch(std::string_view text) const {
  if (!re_ || !HasDigit(text)) return false;
  if (!filter_) return true;
  // The filter is asked only when one more atom is found (it allocates); a training loop's
  // chunk of lines ends at its first line.
  const bool passes = FindAtoms(text, atoms_, [&](const std::vector<int>& found) {
    std::vector<int> passed;
    filter_->AllPotentials(found, &passed);
    return !passed.empty();
  });
  // Not found ignoring ASCII case. Other bytes fold by Unicode's rules (a long s is an s): the
  // regex decides.
  return passes || !IsAscii(text);
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
