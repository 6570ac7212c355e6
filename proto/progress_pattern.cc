// See progress_pattern.h.
#include "proto/progress_pattern.h"

#include <re2/filtered_re2.h>
#include <re2/re2.h>

#if defined(__x86_64__)
#include <tmmintrin.h>
#endif

#include <algorithm>
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

// Looks for `atoms` (lowercase, two bytes or more) in `text` ignoring ASCII case, in one pass,
// and only the candidates that pass a test of their first two bytes are compared whole. Each
// time one more atom is found, asks `enough` with the indexes of those found so far, and stops
// when it says so. A memchr per occurrence of an atom's first letter was slow where that letter
// is frequent (base64, hex), and a pass per atom slow where one atom never comes (issue 35).
// Sixteen positions are tested at a time: with SSSE3 and up to 8 atoms, each byte is classed by
// two table lookups on its nibbles (a bit per atom whose first, or second, byte it can be: a
// letter's two cases differ only in the high nibble's bit 1, so the classes are exact); else
// by comparing with every atom's first two bytes (SSE2), else one position at a time.
template <typename Enough>
class AtomSearch {
 public:
  AtomSearch(std::string_view text, const std::vector<std::string>& atoms, Enough enough)
      : text_(text), atoms_(atoms), enough_(enough) {
    for (size_t a = 0; a < atoms.size() && a < kMaxAtoms; ++a) {
      if (atoms[a].size() < 2) seen_ |= 1U << a;  // none are (min_atom_len): "maybe"
    }
    all_ = atoms.size() >= kMaxAtoms ? ~0U : (1U << atoms.size()) - 1;
    if (atoms.size() > kMaxAtoms) seen_ = all_;
  }

  // True once `enough` said so. `*ascii` is set when false is returned: whether every byte of
  // the text (all of it was looked at) is ASCII.
  bool Run(bool* ascii) {
    if (Ask()) return true;
    size_t i = 0;
    uint32_t high = 0;  // the high bits of the bytes the vector loops looked at
#if defined(__x86_64__)
    if (atoms_.size() <= 8 && __builtin_cpu_supports("ssse3")) {
      if (ByNibbles(&i, &high)) return true;
    } else if (ByPrefixes(&i, &high)) {
      return true;
    }
#endif
    for (; i < text_.size() && seen_ != all_; ++i) {  // the tail, or every position
      high |= static_cast<unsigned char>(text_[i]) & 0x80;
      const char c = AsciiLower(text_[i]);
      for (size_t a = 0; a < atoms_.size(); ++a) {
        if ((seen_ & (1U << a)) == 0 && atoms_[a][0] == c) Check(i, a);
      }
      if (Ask()) return true;
    }
    // Stopped early (every atom seen without `enough`): the rest is looked at for its bytes.
    *ascii = high == 0 && IsAscii(text_.substr(std::min(i, text_.size())));
    return false;
  }

 private:
  static constexpr size_t kMaxAtoms = 32;  // a bit each; more (no pattern has them) all say "maybe"

  void Check(size_t at, size_t a) {
    if (atoms_[a].size() <= text_.size() - at && AtomAt(text_.data() + at, atoms_[a])) {
      seen_ |= 1U << a;
    }
  }
  // Asks `enough` when an atom was found since it was last asked.
  bool Ask() {
    if (seen_ == asked_) return false;
    asked_ = seen_;
    std::vector<int> found;
    for (size_t a = 0; a < atoms_.size(); ++a) {
      if (a >= kMaxAtoms || (seen_ & (1U << a)) != 0) found.push_back(static_cast<int>(a));
    }
    return enough_(found);
  }

#if defined(__x86_64__)
  // Per byte of `v`: the bits that both its low nibble's entry in `lo` and its high nibble's in
  // `hi` have.
  __attribute__((target("ssse3"))) static __m128i Classes(__m128i v, __m128i lo, __m128i hi) {
    const __m128i nibble = _mm_set1_epi8(15);
    return _mm_and_si128(_mm_shuffle_epi8(lo, _mm_and_si128(v, nibble)),
                         _mm_shuffle_epi8(hi, _mm_and_si128(_mm_srli_epi16(v, 4), nibble)));
  }

  // The nibble tables' loop (SSSE3's pshufb); advances *i past what it looked at.
  __attribute__((target("ssse3"))) bool ByNibbles(size_t* i, uint32_t* high) {
    alignas(16) std::array<uint8_t, 16> lo0{}, hi0{}, lo1{}, hi1{};
    for (size_t a = 0; a < atoms_.size(); ++a) {
      for (int k = 0; k < 2; ++k) {
        const auto c = static_cast<uint8_t>(atoms_[a][k]);
        const bool letter = c >= 'a' && c <= 'z';
        for (uint8_t b : {c, static_cast<uint8_t>(letter ? c - 0x20 : c)}) {
          (k == 0 ? lo0 : lo1)[b & 15] |= static_cast<uint8_t>(1U << a);
          (k == 0 ? hi0 : hi1)[b >> 4] |= static_cast<uint8_t>(1U << a);
        }
      }
    }
    auto load = [](const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); };
    const __m128i l0 = load(lo0.data()), h0 = load(hi0.data());
    const __m128i l1 = load(lo1.data()), h1 = load(hi1.data());
    __m128i any_high = _mm_setzero_si128();
    for (; *i + 17 <= text_.size() && seen_ != all_; *i += 16) {
      const __m128i v0 = load(text_.data() + *i);
      any_high = _mm_or_si128(any_high, v0);
      const __m128i unseen = _mm_set1_epi8(static_cast<char>(~seen_ & 0xff));
      const __m128i hit = _mm_and_si128(
          _mm_and_si128(Classes(v0, l0, h0), Classes(load(text_.data() + *i + 1), l1, h1)), unseen);
      const auto mask = static_cast<unsigned>(
          _mm_movemask_epi8(_mm_cmpeq_epi8(hit, _mm_setzero_si128())) ^ 0xffff);
      if (mask == 0) continue;
      alignas(16) std::array<uint8_t, 16> bits;
      _mm_store_si128(reinterpret_cast<__m128i*>(bits.data()), hit);
      for (unsigned m = mask; m != 0; m &= m - 1) {
        const auto p = static_cast<size_t>(__builtin_ctz(m));
        for (unsigned b = bits[p] & ~seen_; b != 0; b &= b - 1) {
          Check(*i + p, static_cast<size_t>(__builtin_ctz(b)));
        }
      }
      if (Ask()) return true;
    }
    *high |= static_cast<uint32_t>(_mm_movemask_epi8(any_high));
    return false;
  }

  // Every atom's first two bytes compared (SSE2); advances *i past what it looked at.
  bool ByPrefixes(size_t* i, uint32_t* high) {
    struct Prefix {
      __m128i fold0, want0, fold1, want1;
    };
    std::array<Prefix, kMaxAtoms> prefixes;
    for (size_t a = 0; a < atoms_.size() && a < kMaxAtoms; ++a) {
      if ((seen_ & (1U << a)) != 0) continue;
      auto fold = [](char c) { return _mm_set1_epi8(c >= 'a' && c <= 'z' ? 0x20 : 0); };
      prefixes[a] = {fold(atoms_[a][0]), _mm_set1_epi8(atoms_[a][0]), fold(atoms_[a][1]),
                     _mm_set1_epi8(atoms_[a][1])};
    }
    __m128i any_high = _mm_setzero_si128();
    for (; *i + 17 <= text_.size() && seen_ != all_; *i += 16) {
      const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text_.data() + *i));
      const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text_.data() + *i + 1));
      any_high = _mm_or_si128(any_high, v0);
      for (size_t a = 0; a < atoms_.size(); ++a) {
        if ((seen_ & (1U << a)) != 0) continue;
        const Prefix& x = prefixes[a];
        const __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(v0, x.fold0), x.want0),
                                          _mm_cmpeq_epi8(_mm_or_si128(v1, x.fold1), x.want1));
        for (auto mask = static_cast<unsigned>(_mm_movemask_epi8(hit));
             mask != 0 && (seen_ & (1U << a)) == 0; mask &= mask - 1) {
          Check(*i + static_cast<size_t>(__builtin_ctz(mask)), a);
        }
      }
      if (Ask()) return true;
    }
    *high |= static_cast<uint32_t>(_mm_movemask_epi8(any_high));
    return false;
  }
#endif

  std::string_view text_;
  const std::vector<std::string>& atoms_;
  Enough enough_;
  uint32_t seen_ = 0;
  uint32_t all_ = 0;
  uint32_t asked_ = 0;  // what `enough` was last asked about
};

}  // namespace

bool ProgressPattern::MayMatch(std::string_view text) const {
  if (!re_ || !HasDigit(text)) return false;
  if (!filter_) return true;
  // The filter is asked only when one more atom is found (it allocates); a training loop's
  // chunk of lines ends at its first line.
  bool ascii = true;
  AtomSearch search(text, atoms_, [&](const std::vector<int>& found) {
    std::vector<int> passed;
    filter_->AllPotentials(found, &passed);
    return !passed.empty();
  });
  if (search.Run(&ascii)) return true;
  // Not found ignoring ASCII case. Other bytes fold by Unicode's rules (a long s is an s): the
  // regex decides.
  return !ascii;
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
