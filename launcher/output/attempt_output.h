// AttemptOutput: where the records streamed from every worker's agent meet. It prints them as
// labelled lines (each line whole, stdout to stdout, stderr to stderr), keeps the launcher's
// copies under $PODRUN_HOME/jobs/<id>/<attempt>/ (merged.log: the labelled lines; wK.log: what
// worker K printed, as plain text), and remembers each worker's last lines for the failure
// report. It marks how far the copies have got (copy_mark.h) a few times a second, so that a
// driver taking over resumes them exactly (Resume). Thread-safe: Add and Finish are called from any
// thread (the log followers' stream callbacks, on gRPC's threads or the SSH stream's, several
// workers at once); a ticker thread of its own prints progress states that fell due between
// batches. Memory: bounded per worker (LabelledOutput's 64 KiB lines, a tail of at most 16 KiB).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/output/drop_behind.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/ticker_thread.h"
#include "proto/log_record.h"
#include "proto/unique_fd.h"

namespace podrun {

struct CopyMark;

class AttemptOutput {
 public:
  // `dir`: where the launcher's copies go (created). An empty `dir` keeps no copies and runs no
  // ticker: '\r' progress states are then printed only as batches arrive.
  AttemptOutput(const std::filesystem::path& dir, bool color, bool prefix = true);
  // Stops the ticker; held partial lines are not printed (call Finish for each worker), but
  // marked.
  ~AttemptOutput();

  // For a driver taking over an attempt another one copied: cuts the copies back to where the
  // last mark says they were complete, takes its partial lines back, and returns each worker's
  // next sequence number to read from (a worker absent: 1). Without a mark (an attempt that was
  // never followed, or followed by an older podrun), the copies are started afresh from record
  // 1. Call before the first Add.
  std::map<int, uint64_t> Resume();
  // Prints and stores a batch of `worker`'s records (in sequence order).
  void Add(int worker, const std::vector<LogRecord>& records);
  // Prints a final partial line of `worker`, if any.
  void Finish(int worker);
  // The last (at most 10) complete lines `worker` printed, stdout and stderr alike.
  std::vector<std::string> LastLines(int worker) const;

 private:
  static constexpr size_t kTailLines = 10;
  static constexpr size_t kTailBytes = 8192;
  static constexpr auto kTickPeriod = std::chrono::milliseconds(100);

  static constexpr auto kMarkEvery = std::chrono::milliseconds(250);

  // Says once on stderr that a copy under dir_ could not be written.
  void WarnCopyFailed(const std::string& what);
  // The file wK.log, opened on first use; -1 when it cannot be. Caller holds mutex_.
  int WorkerFd(int worker);
  // Writes the copy mark now (`force`) or when kMarkEvery has passed. Caller holds mutex_.
  void Mark(bool force);
  // False when `mark` says a copy is longer than it is on disk (or a size cannot be read).
  // Caller holds mutex_.
  bool MarkWithinCopies(const CopyMark& mark);

  mutable std::mutex mutex_;
  std::filesystem::path dir_;
  LabelledOutput screen_;
  UniqueFd merged_fd_;
  std::map<int, UniqueFd> worker_fds_;
  // The copies kept out of the page cache as they grow (merged.log, then per worker).
  DropBehind merged_drop_;
  std::map<int, DropBehind> worker_drops_;
  std::map<int, std::string> tails_;  // the last kTailBytes..2*kTailBytes bytes per worker
  std::map<int, uint64_t> next_seq_;  // per worker: the first record not copied
  std::chrono::steady_clock::time_point marked_{};
  bool warned_ = false;
  std::optional<TickerThread> ticker_;  // last: stopped first
};

}  // namespace podrun
