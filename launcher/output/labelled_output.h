// Prints workers' output line by line as "[wK] text": stdout lines to one fd, stderr lines
// to another, each line whole (never mixed with another worker's), the label coloured if
// asked. Single-threaded: call from the event loop only.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "launcher/output/line_splitter.h"
#include "launcher/stream.h"
#include "proto/write_all.h"

namespace podrun {

class LabelledOutput {
 public:
  // `color`: label with ANSI colours. `prefix`: false prints the text alone (logs --no-prefix).
  LabelledOutput(int out_fd, int err_fd, bool color, bool prefix = true);

  // Prints the complete lines in `data`; a partial line is held until its newline or Finish.
  void Write(int worker, Stream stream, std::string_view data);

  // Prints the held partial lines of `worker` (a final line without newline).
  void Finish(int worker);

  // Also writes every line to `fd` (e.g. the launcher's merged.log), always uncoloured.
  void Tee(int fd) { tee_fd_ = fd; }

  // The label printed before a line of `worker`, e.g. "[w3] ".
  std::string Label(int worker) const { return MakeLabel(worker, color_); }

  // True when stdout is a terminal and NO_COLOR is unset (CONTRACT.md, Output).
  static bool ShouldColor(int fd);

 private:
  void Emit(int worker, Stream stream, std::string_view line);
  void Flush(Stream stream);
  std::string MakeLabel(int worker, bool color) const;
  const std::string& CachedLabel(int worker, bool color);

  int fds_[2];
  int tee_fd_ = -1;
  bool color_;
  bool prefix_;
  std::string pending_[2];
  std::string tee_pending_;
  std::map<int, std::string> labels_[2];  // [plain, coloured] by worker
  std::map<int, LineSplitter> splitters_[2];
};

}  // namespace podrun
