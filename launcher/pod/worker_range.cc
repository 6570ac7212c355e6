// Parsing and formatting of worker index lists.
#include "launcher/pod/worker_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "launcher/base/error.h"

namespace podrun {
namespace {

int ParseIndex(const std::string& text, const std::string& whole) {
  int value = -1;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || value < 0) {
    throw UsageError(fmt::format("bad worker list '{}': '{}' is not a worker index", whole, text));
  }
  return value;
}

}  // namespace

std::vector<int> ParseWorkerRange(const std::string& text, int num_workers) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) throw UsageError(fmt::format("bad worker list '{}': empty entry", text));
    size_t dash = part.find('-');
    int first = ParseIndex(part.substr(0, dash), text);
    int last = dash == std::string::npos ? first : ParseIndex(part.substr(dash + 1), text);
    if (last < first) {
      throw UsageError(fmt::format("bad worker list '{}': range '{}' runs backwards", text, part));
    }
    if (last >= num_workers) {
      throw UsageError(
          fmt::format("bad worker list '{}': worker {} does not exist (the pod has {})", text, last,
                      num_workers));
    }
    for (int i = first; i <= last; ++i) out.push_back(i);
  }
  if (out.empty()) throw UsageError("empty worker list");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatWorkerRange(const std::vector<int>& indexes) {
  std::string out;
  for (size_t i = 0; i < indexes.size();) {
    size_t j = i;
    while (j + 1 < indexes.size() && indexes[j + 1] == indexes[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(indexes[i]);
    if (j > i) out += "-" + std::to_string(indexes[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace podrun
