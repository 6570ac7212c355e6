// See step_reader.h.
#include "worker/supervisor/step_reader.h"

#include <algorithm>
#include <cstring>

namespace podrun::agent {
namespace {

bool IsLineEnd(char c) { return c == '\n' || c == '\r'; }  // a progress bar's '\r' ends one too

// The first line end in `data`, or npos. (string_view's find_first_of calls memchr on its set for
// every byte.)
size_t FirstLineEnd(std::string_view data) {
  for (size_t i = 0; i < data.size(); ++i) {
    if (IsLineEnd(data[i])) return i;
  }
  return std::string_view::npos;
}

// The last line end in `data` before `end`, or npos.
size_t LastLineEnd(std::string_view data, size_t end) {
  for (size_t i = std::min(end, data.size()); i > 0; --i) {
    if (IsLineEnd(data[i - 1])) return i - 1;
  }
  return std::string_view::npos;
}

}  // namespace

void StepReader::Add(std::string_view data, int64_t time_ns, int stream) {
  if (!pattern_.enabled()) return;
  std::string& line_ = lines_[stream == 1 ? 1 : 0];
  // A chunk's lines all get its one time, so of the lines it ends only the last one that holds
  // a step matters: they are looked at from the last one back, and the pattern runs on one line
  // of a chunk in the common case (a training loop's every line holds its step), not on each.
  const size_t first_end = FirstLineEnd(data);
  if (first_end == std::string_view::npos) {
    AppendToLine(line_, data);  // the line goes on in the next chunk
    return;
  }
  const size_t last_end = LastLineEnd(data, data.size());
  bool found = false;
  // The lines after the first, whole in this chunk: looked at only when the prefilter, run on
  // all of them at once, says one of them may hold a step (output without steps costs one pass).
  const std::string_view whole = data.substr(first_end + 1, last_end - first_end);
  for (size_t end = pattern_.MayMatch(whole) ? last_end : first_end; end > first_end && !found;) {
    // The lines of the next block back (about kBlockBytes of whole lines) one by one only when
    // the prefilter says one of them may hold a step: output where it errs on the whole chunk
    // (base64 holds "step" ignoring case about once in 256 KiB) is not read line by line.
    // data[first_end] is a line end: the search always stops there at the latest.
    const size_t block_start =
        end > first_end + kBlockBytes ? LastLineEnd(data, end - kBlockBytes) : first_end;
    if (!pattern_.MayMatch(data.substr(block_start + 1, end - block_start))) {
      end = block_start;
      continue;
    }
    while (end > block_start && !found) {
      const size_t start = LastLineEnd(data, end);
      const std::string_view line = data.substr(start + 1, std::min(end - start - 1, kLineBytes));
      if (!line.empty()) {
        if (std::optional<int64_t> step = pattern_.Step(line)) {
          Stepped(time_ns, *step);
          found = true;
        }
      }
      end = start;
    }
  }
  if (found) {
    line_.clear();  // the chunk's first line (begun in an earlier chunk) is older
  } else {
    AppendToLine(line_, data.substr(0, first_end));
    Line(line_, time_ns);
  }
  AppendToLine(line_, data.substr(last_end + 1));
}

void StepReader::AppendToLine(std::string& line, std::string_view data) {
  if (line.size() < kLineBytes) {
    line.append(data.data(), std::min(data.size(), kLineBytes - line.size()));
  }
}

void StepReader::Line(std::string& line, int64_t time_ns) {
  if (!line.empty()) {
    if (std::optional<int64_t> step = pattern_.Step(line)) Stepped(time_ns, *step);
  }
  line.clear();
}

void StepReader::Stepped(int64_t time_ns, int64_t step) {
  if (step_ && *step_ == step) return;          // the same step said again (a second log line)
  if (step_ && step < *step_) recent_.clear();  // counting again (a new loop): a new rate
  step_ = step;
  step_ns_ = time_ns;
  if (!first_step_ns_) first_step_ns_ = time_ns;
  changed_ = true;
  thinning_.Add(time_ns, step);
  // The window keeps points at least kRecentNs/kRecentPoints apart, the newest always.
  const int64_t spacing = kRecentNs / static_cast<int64_t>(kRecentPoints);
  if (recent_.size() >= 2 && time_ns - recent_[recent_.size() - 2].time_ns < spacing) {
    recent_.back() = {time_ns, step};
  } else {
    recent_.push_back({time_ns, step});
  }
  // Older points than the one just before the window's start are not needed.
  while (recent_.size() > 2 && recent_[1].time_ns <= time_ns - kRecentNs) recent_.pop_front();
}

v1::StepRecord StepReader::TakeRecord(int64_t now_ns) {
  changed_ = false;
  v1::StepRecord record;
  record.set_written_ns(now_ns);
  if (!step_) return record;
  record.set_has_step(true);
  record.set_step(*step_);
  record.set_step_ns(step_ns_);
  record.set_first_step_ns(first_step_ns_);
  for (const StepPoint& p : recent_) {
    v1::StepPoint* out = record.add_recent();
    out->set_time_ns(p.time_ns);
    out->set_step(p.step);
  }
  for (const StepPoint& p : thinning_.samples()) {
    v1::StepPoint* out = record.add_samples();
    out->set_time_ns(p.time_ns);
    out->set_step(p.step);
  }
  return record;
}

}  // namespace podrun::agent
