// LogPrinter: prints workers' output as whole labelled lines (cut at 64 KiB), directly or folded
// (`--fold`: a line every selected worker printed alike, once, as `[w0-3] text`, through a
// LogFolder); '\r' progress states unfolded and rate-limited; control sequences escaped on a
// terminal. For `logs` and `exec`. Thread-safe.
#pragma once

#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/output/control_escape.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/line_splitter.h"
#include "launcher/output/log_folder.h"
#include "launcher/pod/worker_range.h"
#include "proto/log_record.h"

namespace podrun {

class LogPrinter {
  // Output is written in chunks of about this size (and on Flush/Tick).
  static constexpr size_t kFlushBytes = 64 << 10;

 public:
  LogPrinter(const std::vector<int>& workers, bool fold, bool prefix, bool color)
      : labels_(STDOUT_FILENO, STDERR_FILENO, color, prefix), prefix_(prefix), color_(color) {
    for (int s = 0; s < 2; ++s) {
      terminal_[s] = ::isatty(s == 0 ? STDOUT_FILENO : STDERR_FILENO) == 1;
      progress_[s].emplace(terminal_[s]
                               ? std::chrono::steady_clock::duration(kTerminalProgressInterval)
                               : kFileProgressInterval,
                           nullptr);
    }
    if (fold) {
      folder_.emplace(workers, [this](const std::vector<int>& ws, Stream stream,
                                      std::string_view text) { Emit(ws, stream, text); });
    }
  }

  // Prints the complete lines of `records` (a partial line waits for its end or Finish).
  void Add(int worker, const std::vector<LogRecord>& records) {
    std::lock_guard lock(mutex_);
    for (const LogRecord& r : records) AddLocked(worker, r);
  }
  void Add(int worker, const LogRecord& record) {
    std::lock_guard lock(mutex_);
    AddLocked(worker, record);
  }
  // `worker`'s log is complete: prints its final partial lines (and releases folded lines).
  void Finish(int worker) {
    std::lock_guard lock(mutex_);
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      splitters_[static_cast<int>(stream)][worker].Finish(
          [&](std::string_view line) { Line(worker, stream, line); });
    }
    if (folder_) folder_->End(worker);
  }
  // Writes what is buffered. False once stdout or stderr is closed (the reader went away).
  bool Flush() {
    std::lock_guard lock(mutex_);
    FlushLocked(Stream::kStdout);
    FlushLocked(Stream::kStderr);
    return !broken_;
  }
  // Prints the progress states whose rate limit has passed.
  void Tick() {
    std::lock_guard lock(mutex_);
    for (Stream stream : {Stream::kStdout, Stream::kStderr}) {
      progress_[static_cast<int>(stream)]->TakeDue(
          [&](int worker, std::string_view state) { Emit({worker}, stream, state); });
    }
    FlushLocked(Stream::kStdout);
    FlushLocked(Stream::kStderr);
  }
  bool broken() const {
    std::lock_guard lock(mutex_);
    return broken_;
  }

 private:
  void AddLocked(int worker, const LogRecord& r) {
    Stream stream = r.stream == LogStream::kStderr ? Stream::kStderr : Stream::kStdout;
    splitters_[static_cast<int>(stream)][worker].Feed(
        r.data, [&](std::string_view line) { Line(worker, stream, line); },
        [&](std::string_view state) {  // progress is never folded
          if (progress_[static_cast<int>(stream)]->Offer(worker, state)) {
            Emit({worker}, stream, state);
          }
        });
  }

  void Line(int worker, Stream stream, std::string_view text) {
    progress_[static_cast<int>(stream)]->Drop(worker);
    if (folder_) {
      folder_->AddLine(worker, stream, text);
    } else {
      Emit({worker}, stream, text);
    }
  }

  void Emit(const std::vector<int>& workers, Stream stream, std::string_view text) {
    int s = static_cast<int>(stream);
    // Keeps the order between stdout and stderr lines when both go to one terminal.
    if (!out_[1 - s].empty()) FlushLocked(static_cast<Stream>(1 - s));
    std::string& out = out_[s];
    if (workers.size() == 1) {
      out += labels_.Label(workers[0]);
    } else if (prefix_) {
      std::string label = "[w" + FormatWorkerRange(workers) + "]";
      out += color_ ? "\x1b[1m" + label + "\x1b[0m " : label + " ";
    }
    out.append(terminal_[s] ? EscapeControls(text, scratch_) : text);
    out += '\n';
    if (out.size() >= kFlushBytes) FlushLocked(stream);
  }

  void FlushLocked(Stream stream) {
    std::string& out = out_[static_cast<int>(stream)];
    if (out.empty()) return;
    if (!broken_ && !WriteAll(stream == Stream::kStdout ? STDOUT_FILENO : STDERR_FILENO, out)) {
      broken_ = true;
    }
    out.clear();
  }

  mutable std::mutex mutex_;
  LabelledOutput labels_;  // for Label() only
  bool prefix_;
  bool color_;
  std::optional<LogFolder> folder_;
  std::map<int, LineSplitter> splitters_[2];
  bool terminal_[2];  // escape control sequences, progress every 250 ms
  std::optional<ProgressThrottle> progress_[2];
  std::string scratch_;
  std::string out_[2];
  bool broken_ = false;
};

}  // namespace podrun
