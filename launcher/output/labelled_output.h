// Prints workers' output line by line as "[wK] text": stdout lines to one fd, stderr lines
// to another, each line whole (never mixed with another worker's), the label coloured if
// asked. Bounded (docs/reference.md, Output): lines are cut at 64 KiB, '\r' progress states are
// printed rate-limited (ProgressThrottle: every 250 ms on a terminal, 5 s into a file or pipe
// and into the Tee copy), and on a terminal control sequences other than colours are escaped.
// Memory: about 2 x 64 KiB per worker and stream, whatever is written.
//
// Not thread-safe: one caller at a time. `exec` calls it from its event loop only; the
// launcher's AttemptOutput and `logs`' printer call it from their follow threads under their own
// mutex (the rate limit needs Tick() called regularly, e.g. by a TickerThread).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/base/stream.h"
#include "launcher/output/line_splitter.h"
#include "launcher/output/progress_throttle.h"
#include "proto/write_all.h"

namespace podrun {

struct LabelledOutputOptions {
  bool color = false;  // label with ANSI colours
  bool prefix = true;  // false prints the text alone (logs --no-prefix)
  // Treat the out/err fds as terminals (escape controls, fast progress); unset: isatty.
  std::optional<bool> terminal;
  SteadyClockFn clock;  // for the progress rate limit; unset: steady_clock::now
};

class LabelledOutput {
 public:
  LabelledOutput(int out_fd, int err_fd, LabelledOutputOptions options);
  LabelledOutput(int out_fd, int err_fd, bool color, bool prefix = true)
      : LabelledOutput(out_fd, err_fd, MakeOptions(color, prefix)) {}

  // Prints the complete lines in `data` (and a progress state if it is due); a partial line
  // is held until its newline, Finish, or until it passes 64 KiB.
  void Write(int worker, Stream stream, std::string_view data);

  // Prints the held partial lines of `worker` (a final line without newline).
  void Finish(int worker);

  // The partial line held for `worker`'s `stream` (nothing printed yet), and setting it: a
  // replaced driver's copy of the log goes on where the last one stopped (attempt_output.h).
  LineSplitter::Held Held(int worker, Stream stream) const;
  void Restore(int worker, Stream stream, LineSplitter::Held held);

  // Prints the progress states whose rate limit has passed since they arrived.
  void Tick();

  // Also writes every line to `fd` (e.g. the launcher's merged.log): uncoloured, unescaped,
  // progress as into a file. Write failures of the copy are counted, not fatal.
  void Tee(int fd) { tee_fd_ = fd; }
  // Writes to the Tee fd that failed (e.g. a full disk); 0 if none.
  size_t tee_failures() const { return tee_failures_; }

  // The label printed before a line of `worker`, e.g. "[w3] ".
  std::string Label(int worker) const { return MakeLabel(worker, color_); }

  // True when stdout is a terminal and NO_COLOR is unset (docs/reference.md, Output).
  static bool ShouldColor(int fd);

  // Options with the given colour and prefix, the rest default.
  static LabelledOutputOptions MakeOptions(bool color, bool prefix) {
    LabelledOutputOptions options;
    options.color = color;
    options.prefix = prefix;
    return options;
  }

 private:
  void EmitScreen(int worker, Stream stream, std::string_view line);
  void EmitTee(int worker, std::string_view line);
  // True when the Tee copy gets exactly the bytes printed on `stream` (no colour, not a
  // terminal): then those are written twice instead of being formatted twice.
  bool TeeMirrors(int s) const { return tee_fd_ >= 0 && !color_ && !terminal_[s]; }
  void OnLine(int worker, Stream stream, std::string_view line);
  void OnProgress(int worker, Stream stream, std::string_view state);
  void Flush();
  std::string MakeLabel(int worker, bool color) const;
  const std::string& CachedLabel(int worker, bool color);

  int fds_[2];
  bool terminal_[2];
  int tee_fd_ = -1;
  size_t tee_failures_ = 0;
  bool color_;
  bool prefix_;
  std::string pending_[2];
  std::string tee_pending_;
  std::string scratch_;
  // The labels of the worker being written (Write looks them up once, not per line).
  const std::string* screen_label_ = nullptr;
  const std::string* tee_label_ = nullptr;
  bool mirror_ = false;                   // TeeMirrors for the stream being written
  std::map<int, std::string> labels_[2];  // [plain, coloured] by worker
  std::map<int, LineSplitter> splitters_[2];
  std::optional<ProgressThrottle> screen_progress_[2];
  std::optional<ProgressThrottle> tee_progress_[2];
};

}  // namespace podrun
