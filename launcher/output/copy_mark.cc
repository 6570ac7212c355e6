// See copy_mark.h. The format: a text header, then the partial lines' bytes as they are.
//   podrun-copy-mark 1
//   merged <size>
//   w <index> <next_seq> <copy_size> <out: partial state had cr> <err: partial state had cr>
//   data
//   <bytes: each worker's out.partial, out.last_state, err.partial, err.last_state, in order>
#include "launcher/output/copy_mark.h"

#include <fmt/format.h>

#include <sstream>
#include <vector>

namespace podrun {
namespace {

constexpr std::string_view kMagic = "podrun-copy-mark 1\n";
constexpr std::string_view kData = "data\n";
constexpr uint64_t kMaxHeld = 4 * LineSplitter::kMaxLineBytes;

std::string HeldHeader(const LineSplitter::Held& h) {
  return fmt::format("{} {} {} {}", h.partial.size(), h.last_state.size(), h.had_progress ? 1 : 0,
                     h.cr_pending ? 1 : 0);
}

}  // namespace

std::string FormatCopyMark(const CopyMark& mark) {
  std::string text(kMagic);
  text += fmt::format("merged {}\n", mark.merged_size);
  for (const auto& [index, w] : mark.workers) {
    text += fmt::format("w {} {} {} {} {}\n", index, w.next_seq, w.copy_size, HeldHeader(w.out),
                        HeldHeader(w.err));
  }
  text += kData;
  for (const auto& [index, w] : mark.workers) {
    for (const LineSplitter::Held* h : {&w.out, &w.err}) text += h->partial + h->last_state;
  }
  return text;
}

std::optional<CopyMark> ParseCopyMark(std::string_view text) {
  if (!text.starts_with(kMagic)) return std::nullopt;
  const size_t data = text.find(std::string("\n") + std::string(kData));
  if (data == std::string_view::npos) return std::nullopt;
  std::istringstream header(std::string(text.substr(kMagic.size(), data + 1 - kMagic.size())));
  std::string_view bytes = text.substr(data + 1 + kData.size());
  CopyMark mark;
  std::string word;
  if (!(header >> word >> mark.merged_size) || word != "merged") return std::nullopt;
  struct Sizes {
    uint64_t partial = 0, state = 0;
    int had = 0, cr = 0;
  };
  struct Entry {
    int index = 0;
    Sizes held[2];
  };
  std::vector<Entry> sizes;
  while (header >> word) {
    if (word != "w") return std::nullopt;
    int index = 0;
    CopyMark::Worker w;
    Sizes s[2];
    if (!(header >> index >> w.next_seq >> w.copy_size)) return std::nullopt;
    for (Sizes& x : s) {
      if (!(header >> x.partial >> x.state >> x.had >> x.cr)) return std::nullopt;
      if (x.partial > kMaxHeld || x.state > kMaxHeld || x.had < 0 || x.had > 1 || x.cr < 0 ||
          x.cr > 1) {
        return std::nullopt;
      }
    }
    if (w.next_seq == 0 || !mark.workers.emplace(index, w).second) return std::nullopt;
    sizes.push_back({index, {s[0], s[1]}});
  }
  for (const Entry& e : sizes) {
    const Sizes* s = e.held;
    CopyMark::Worker& w = mark.workers[e.index];
    LineSplitter::Held* held[2] = {&w.out, &w.err};
    for (int k = 0; k < 2; ++k) {
      if (bytes.size() < s[k].partial + s[k].state) return std::nullopt;
      held[k]->partial = std::string(bytes.substr(0, s[k].partial));
      held[k]->last_state = std::string(bytes.substr(s[k].partial, s[k].state));
      held[k]->had_progress = s[k].had == 1;
      held[k]->cr_pending = s[k].cr == 1;
      bytes.remove_prefix(s[k].partial + s[k].state);
    }
  }
  if (!bytes.empty()) return std::nullopt;
  return mark;
}

}  // namespace podrun
