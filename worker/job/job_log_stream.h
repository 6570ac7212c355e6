// StreamJobLog: one job attempt's log from a sequence number on, read from the job's files
// (whichever agent or supervisor wrote them), following it until the job ends. Shared by the
// StreamLogs RPC and `podrun-agent stream-log` (bulk logs over an SSH channel of their own).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "proto/log_record.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"
#include "worker/supervisor/log_writer.h"

namespace podrun::agent {

// Where StreamJobLog delivers. Each call returns false when the reader went away.
class JobLogSink {
 public:
  virtual ~JobLogSink() = default;
  // The next records, in sequence order (about kLogBatchBytes of data at a time).
  virtual bool Records(std::vector<LogRecord>&& records) = 0;
  // The job has ended and every record was delivered; `gap`: what it could not keep on disk.
  virtual bool End(const ProcessEnd& exit, const std::optional<LogGapInfo>& gap) = 0;
};

enum class JobLogStreamEnd {
  kEnded,       // End was delivered
  kCaughtUp,    // not following: the log's current end was reached
  kReaderGone,  // the sink said the reader went away
  kInterrupted  // keep_going() said stop
};

// Streams the log of the job in `dir` (`snap`: its state when asked; the caller has checked that
// the job exists) from `from_seq` on. With `follow`, waits for more until the job has ended.
// Records the supervisor holds in memory (a full disk) are fetched from it in order.
// `keep_going` is asked between waits. Throws std::system_error on I/O errors.
JobLogStreamEnd StreamJobLog(const std::filesystem::path& home, const JobDir& dir, JobSnapshot snap,
                             uint64_t from_seq, bool follow, JobLogSink& sink,
                             const std::function<bool()>& keep_going);

}  // namespace podrun::agent
