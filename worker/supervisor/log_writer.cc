// The supervisor's log writer (see log_writer.h).
#include "worker/supervisor/log_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace podrun::agent {

AppendOnlyLog::AppendOnlyLog(const std::filesystem::path& path)
    : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)) {
  if (!fd_) throw std::runtime_error("open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0) size_ = st.st_size;
}

void AppendOnlyLog::Append(const LogRecord& record) {
  try {
    AppendRecord(fd_.get(), record);
  } catch (const std::system_error& e) {
    (void)!::ftruncate(fd_.get(), size_);
    throw;
  }
  size_ += static_cast<off_t>(kLogRecordHeaderBytes + record.data.size());
}

std::string GapMarkerText(uint64_t chunks, uint64_t bytes, const std::string& cause) {
  return std::string(kGapMarkerPrefix) + std::to_string(chunks) + " chunk(s), " +
         std::to_string(bytes) + " bytes of output not written to disk (" + cause +
         "); they were sent to the launcher attached at the time\n";
}

LogWriter::LogWriter(AppendFn append, ReleaseFn release_reserve)
    : append_(std::move(append)), release_reserve_(std::move(release_reserve)) {}

bool LogWriter::TryWrite(const LogRecord& record) {
  try {
    append_(record);
    return true;
  } catch (const std::system_error& e) {
    if (!gap_) gap_ = LogGapInfo{record.seq, 0, 0, e.code().message()};
    return false;
  }
}

void LogWriter::Append(LogStream stream, std::string_view data, int64_t time_ns) {
  LogRecord record{next_seq_++, time_ns, stream, std::string(data)};
  if (held_.empty() && dropped_chunks_ == 0 && TryWrite(record)) return;
  held_bytes_ += record.data.size();
  undelivered_bytes_ += record.data.size();  // newer than anything a reader had
  held_.push_back(std::move(record));
  Trim();
}

LogRecord LogWriter::PopHeld() {
  LogRecord r = std::move(held_.front());
  held_.pop_front();
  held_bytes_ -= r.data.size();
  if (r.seq > delivered_through_) undelivered_bytes_ -= r.data.size();
  return r;
}

void LogWriter::Trim() {
  while (held_bytes_ > kMaxHeldBytes && held_.size() > 1 &&
         (held_.front().seq <= delivered_through_ || !hold_for_reader_)) {
    const LogRecord r = PopHeld();
    ++dropped_chunks_;
    dropped_bytes_ += r.data.size();
    dropped_last_seq_ = r.seq;
  }
}

void LogWriter::Delivered(uint64_t through_seq) {
  through_seq = std::min(through_seq, last_seq());
  if (through_seq <= delivered_through_) return;
  if (!held_.empty()) {  // held_ is contiguous: the newly delivered ones are found by their seq
    const uint64_t front = held_.front().seq;
    for (uint64_t seq = std::max(delivered_through_ + 1, front);
         seq <= through_seq && seq - front < held_.size(); ++seq) {
      undelivered_bytes_ -= held_[seq - front].data.size();
    }
  }
  delivered_through_ = through_seq;
  Trim();
}

void LogWriter::HoldForReader(bool hold) {
  hold_for_reader_ = hold;
  Trim();
}

bool LogWriter::WriteMarker(size_t count, int64_t now_ns, bool final) {
  uint64_t chunks = dropped_chunks_ + count, bytes = dropped_bytes_;
  for (size_t i = 0; i < count; ++i) bytes += held_[i].data.size();
  const uint64_t seq = count > 0 ? held_[count - 1].seq : dropped_last_seq_;
  const std::string cause = gap_ ? gap_->cause : "unknown";
  const bool written = TryWrite(
      {seq, now_ns, LogStream::kStderr, GapMarkerText(chunks, bytes, cause), kLogRecordGapMarker});
  if (!written && !final) return false;  // tried again later
  gap_->chunks += chunks;
  gap_->bytes += bytes;
  dropped_chunks_ = dropped_bytes_ = dropped_last_seq_ = 0;
  for (size_t i = 0; i < count; ++i) marked_.push_back(PopHeld());
  return written;
}

void LogWriter::Retry(int64_t now_ns) {
  if (dropped_chunks_ > 0 && !WriteMarker(0, now_ns, false)) return;
  while (!held_.empty() && TryWrite(held_.front())) PopHeld();
}

void LogWriter::Finish(int64_t now_ns) {
  Retry(now_ns);
  if (held_.empty() && dropped_chunks_ == 0) return;
  if (!reserve_released_) {  // the reserve is for the marker and the job's small files only
    reserve_released_ = true;
    release_reserve_();
  }
  WriteMarker(held_.size(), now_ns, /*final=*/true);  // the gap is counted even if it fails
}

std::vector<LogRecord> LogWriter::Held(uint64_t from_seq, size_t max_bytes) const {
  std::vector<LogRecord> out;
  size_t bytes = 0;
  // Takes from `records` (contiguous seqs: the first one wanted is found by its number); false
  // once max_bytes are taken.
  auto take = [&](const auto& records) {
    if (records.empty() || records.back().seq < from_seq) return true;
    const uint64_t front = records.front().seq;
    for (size_t i = from_seq > front ? from_seq - front : 0; i < records.size(); ++i) {
      if (!out.empty() && bytes >= max_bytes) return false;
      bytes += records[i].data.size();
      out.push_back(records[i]);
    }
    return true;
  };
  if (take(marked_)) take(held_);
  return out;
}

}  // namespace podrun::agent
