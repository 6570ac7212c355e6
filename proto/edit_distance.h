// "Did you mean ...?" for unknown commands, options and spec keys, on both sides.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace podrun {

// Levenshtein distance, ignoring ASCII case.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word` when it is close enough to be a plausible typo, else "".
template <typename Range>
std::string Closest(std::string_view word, const Range& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (std::string_view candidate : candidates) {
    const size_t d = EditDistance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

}  // namespace podrun
