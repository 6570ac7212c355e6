// Splits a byte stream into lines and progress states, holding at most 64 KiB of a line
// (docs/reference.md, Output; docs/design.md decision 12).
//
// - A line ends with '\n' (a "\r\n" ending counts as '\n').
// - A line longer than kMaxLineBytes is cut into pieces of at most kMaxLineBytes, each passed
//   on as a line of its own; nothing is dropped. A cut never splits a UTF-8 sequence when the
//   bytes are valid UTF-8 (the piece is then up to 3 bytes shorter).
// - A segment ended by '\r' (not followed by '\n') is a progress state (tqdm, Keras): it is
//   passed to on_progress, not on_line. When the line finally ends, its final text (what
//   follows the last '\r', or the last progress state if nothing follows it) is the line.
// Memory: at most about 2 * kMaxLineBytes per splitter, whatever is fed.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace podrun {

class LineSplitter {
 public:
  static constexpr size_t kMaxLineBytes = 64 << 10;

  // Calls on_line(std::string_view) for each complete line (without its end of line) or
  // piece of a long line in `data`, and on_progress(std::string_view) for each progress state.
  template <class OnLine, class OnProgress>
  void Feed(std::string_view data, OnLine&& on_line, OnProgress&& on_progress);
  // Feed ignoring progress states (their final text still arrives as a line).
  template <class OnLine>
  void Feed(std::string_view data, OnLine&& on_line) {
    Feed(data, on_line, [](std::string_view) {});
  }

  // Emits a final line that had no newline, if any.
  template <class OnLine>
  void Finish(OnLine&& on_line) {
    if (has_partial()) EndLine(on_line);
  }

  bool has_partial() const { return !partial_.empty() || had_progress_ || cr_pending_; }

  // What the splitter holds between two Feeds (the line not ended yet), so that another
  // splitter can go on exactly where this one stopped (a keeper replacing another: the
  // launcher's copy of the log, attempt_output.h).
  struct Held {
    std::string partial;
    std::string last_state;
    bool had_progress = false;
    bool cr_pending = false;
    bool operator==(const Held&) const = default;
  };
  Held held() const { return {partial_, last_state_, had_progress_, cr_pending_}; }
  void Restore(Held held) {
    partial_ = std::move(held.partial);
    last_state_ = std::move(held.last_state);
    had_progress_ = held.had_progress;
    cr_pending_ = held.cr_pending;
  }

 private:
  template <class OnLine>
  void EndLine(OnLine& on_line) {
    on_line(std::string_view(partial_.empty() && had_progress_ ? last_state_ : partial_));
    partial_.clear();
    last_state_.clear();
    had_progress_ = false;
    cr_pending_ = false;
  }
  template <class OnProgress>
  void EndProgress(OnProgress& on_progress) {
    if (partial_.empty()) return;  // "\r\r" or a leading '\r': no new state
    on_progress(std::string_view(partial_));
    last_state_.swap(partial_);
    partial_.clear();
    had_progress_ = true;
  }
  // Where to cut `piece` (kMaxLineBytes + 1 bytes, the last one belonging to the next piece)
  // so that no UTF-8 sequence is split: kMaxLineBytes, or up to 3 bytes less.
  static size_t CutPoint(std::string_view piece) {
    size_t cut = kMaxLineBytes;
    for (size_t back = 0; back < 3; ++back) {
      if ((static_cast<unsigned char>(piece[cut - back]) & 0xC0) != 0x80) return cut - back;
    }
    return (static_cast<unsigned char>(piece[cut - 3]) & 0xC0) != 0x80 ? cut - 3 : cut;
  }
  // The offset of the first '\n' or '\r' in `data`, or npos. `nl` keeps where the next '\n'
  // of the buffer `data` views is (its end: none), for the next call on a shorter view of the
  // same buffer: each byte is searched about once, whatever the mix of '\r' and '\n'.
  static size_t FindEol(std::string_view data, const char*& nl) {
    const char* begin = data.data();
    const char* end = begin + data.size();
    if (nl == nullptr || nl < begin) {
      nl = static_cast<const char*>(std::memchr(begin, '\n', data.size()));
      if (nl == nullptr) nl = end;
    }
    const auto* cr = static_cast<const char*>(std::memchr(begin, '\r', nl - begin));
    const char* eol = cr != nullptr ? cr : nl;
    return eol == end ? std::string_view::npos : static_cast<size_t>(eol - begin);
  }

  std::string partial_;     // the current segment: at most kMaxLineBytes (+1 while cutting)
  std::string last_state_;  // the latest progress state of the current line
  bool had_progress_ = false;
  bool cr_pending_ = false;  // partial_ ended with '\r' at the end of the last Feed
};

template <class OnLine, class OnProgress>
void LineSplitter::Feed(std::string_view data, OnLine&& on_line, OnProgress&& on_progress) {
  const char* nl = nullptr;  // FindEol's next '\n' in data
  while (!data.empty()) {
    if (cr_pending_) {  // is it "\r\n" (a line end) or a progress state?
      cr_pending_ = false;
      if (data[0] == '\n') {
        data.remove_prefix(1);
        EndLine(on_line);
        continue;
      }
      EndProgress(on_progress);
    }
    size_t eol = FindEol(data, nl);
    size_t run = eol == std::string_view::npos ? data.size() : eol;
    // Cut pieces while more than kMaxLineBytes of the segment are known.
    while (partial_.size() + run > kMaxLineBytes) {
      size_t taken;
      if (partial_.empty()) {
        taken = CutPoint(data.substr(0, kMaxLineBytes + 1));
        on_line(data.substr(0, taken));
      } else {
        taken = kMaxLineBytes + 1 - partial_.size();
        partial_.append(data.substr(0, taken));
        size_t cut = CutPoint(partial_);
        on_line(std::string_view(partial_).substr(0, cut));
        partial_.erase(0, cut);
      }
      data.remove_prefix(taken);
      run -= taken;
      if (eol != std::string_view::npos) eol -= taken;
    }
    if (eol == std::string_view::npos) {
      partial_.append(data);
      return;
    }
    if (data[eol] == '\n') {
      if (partial_.empty() && !had_progress_) {
        on_line(data.substr(0, eol));  // the common case: no copy
      } else {
        partial_.append(data.substr(0, eol));
        EndLine(on_line);
      }
      data.remove_prefix(eol + 1);
      continue;
    }
    // '\r'
    partial_.append(data.substr(0, eol));
    if (eol + 1 == data.size()) {
      cr_pending_ = true;
      return;
    }
    if (data[eol + 1] == '\n') {
      EndLine(on_line);
      data.remove_prefix(eol + 2);
    } else {
      EndProgress(on_progress);
      data.remove_prefix(eol + 1);
    }
  }
}

}  // namespace podrun
