// LogWriter: the supervisor's side of a job's log (docs/design.md decisions 5 and 12). Every output
// chunk becomes the next sequenced record, on disk before anyone is told of it. When the disk
// refuses a record (full, quota), nothing is silently lost: the record is held in memory, in
// order, and served to live readers (the agent asks the supervisor for it), writing is retried
// now and then, and what could never be written is replaced on disk by one gap marker: a stderr
// record "podrun-agent: log gap: ..." that carries the sequence number of the last record it
// stands for. Memory is bounded: past kMaxHeldBytes the oldest held records are dropped, first
// those a live reader has had already (Delivered); while a reader is attached (HoldForReader),
// never one it has not had: the supervisor pauses the job's pipes instead (see
// undelivered_bytes), so an attached launcher gets every record however little disk there is.
// Not thread-safe: the supervisor's one loop owns it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/log_record.h"
#include "proto/unique_fd.h"
#include "worker/jobdir/log_gap.h"

namespace podrun::agent {

class LogWriter {
 public:
  inline static constexpr size_t kMaxHeldBytes = 16u << 20;

  // Writes one record where the log lives, all or nothing: throws std::system_error when it
  // could not (having undone a partial write).
  using AppendFn = std::function<void(const LogRecord&)>;
  // Frees the space kept in reserve for the job's own files (called once, when needed).
  using ReleaseFn = std::function<void()>;

  LogWriter(AppendFn append, ReleaseFn release_reserve);

  // Makes `data` the next record. Never throws.
  void Append(LogStream stream, std::string_view data, int64_t time_ns);
  // Tries to write what is held (a marker first for what was dropped). Cheap when nothing is.
  void Retry(int64_t now_ns);
  // At the job's end: retries, and if the disk still refuses, releases the reserve and writes
  // the gap marker for everything held (which stays in memory for live readers); the rest of
  // the reserve is left for the job's exit status and log_gap files.
  void Finish(int64_t now_ns);

  // A live reader has every record up to `through_seq`: held ones up to it may leave memory
  // first when it is needed (they become part of the gap on disk).
  void Delivered(uint64_t through_seq);
  // While `hold` (a reader is attached), a record no reader has had is never dropped; otherwise
  // the oldest held records go once memory is full.
  void HoldForReader(bool hold);

  // Held records with seq >= from_seq (still in memory, not on disk), in order, contiguous: at
  // most about `max_bytes` of data (one record at least).
  std::vector<LogRecord> Held(uint64_t from_seq, size_t max_bytes = SIZE_MAX) const;
  bool holding() const { return !held_.empty() || dropped_chunks_ > 0; }
  size_t held_bytes() const { return held_bytes_; }
  // Of held_bytes, what no reader has had yet (Delivered).
  size_t undelivered_bytes() const { return undelivered_bytes_; }
  uint64_t last_seq() const { return next_seq_ - 1; }
  const std::optional<LogGapInfo>& gap() const { return gap_; }

 private:
  bool TryWrite(const LogRecord& record);
  // Takes held_.front() out of memory (its bytes off the counts) and returns it.
  LogRecord PopHeld();
  // Drops held records from the front, as the bounds say (the class comment).
  void Trim();
  // Writes the marker for held_[0, count) plus what was dropped before them, and moves those
  // held records to marked_. Unless `final`, does nothing if the marker cannot be written.
  bool WriteMarker(size_t count, int64_t now_ns, bool final);

  AppendFn append_;
  ReleaseFn release_reserve_;
  uint64_t next_seq_ = 1;
  std::deque<LogRecord> held_;  // contiguous seqs, not on disk
  size_t held_bytes_ = 0, undelivered_bytes_ = 0;
  uint64_t delivered_through_ = 0;  // a reader has had every record up to this seq
  bool hold_for_reader_ = false;
  // Records dropped from the front of held_ (seqs just before held_.front()), not yet marked.
  uint64_t dropped_chunks_ = 0, dropped_bytes_ = 0, dropped_last_seq_ = 0;
  // Records replaced by a marker written at Finish, kept for live readers.
  std::vector<LogRecord> marked_;
  std::optional<LogGapInfo> gap_;
  bool reserve_released_ = false;
};

// A job's log file, appended all or nothing: a partial write (a full disk) is cut off again
// (ftruncate), so that a torn record never hides the records after it from readers.
class AppendOnlyLog {
 public:
  // Opens (creates, 0600) `path` for appending. Throws std::runtime_error.
  explicit AppendOnlyLog(const std::filesystem::path& path);
  // Throws std::system_error (the file is as before the call).
  void Append(const LogRecord& record);

 private:
  UniqueFd fd_;
  off_t size_ = 0;
};

// The text of a gap marker record.
std::string GapMarkerText(uint64_t chunks, uint64_t bytes, const std::string& cause);

}  // namespace podrun::agent
