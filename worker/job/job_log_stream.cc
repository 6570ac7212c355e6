// See job_log_stream.h.
#include "worker/job/job_log_stream.h"

#include <algorithm>

#include "worker/job/supervisor_client.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How often a follower looks again while nothing changes (the reader may have gone away).
constexpr auto kFollowCheckInterval = std::chrono::milliseconds(500);
// How soon a follower looks again while the supervisor holds output in memory (a full disk).
constexpr auto kHeldCheckInterval = std::chrono::milliseconds(20);

}  // namespace

JobLogStreamEnd StreamJobLog(const std::filesystem::path& home, const JobDir& dir, JobSnapshot snap,
                             uint64_t from_seq, bool follow, JobLogSink& sink,
                             const std::function<bool()>& keep_going) {
  JobDirWatch watch(dir);
  uint64_t next = std::max<uint64_t>(from_seq, 1);
  LogReader reader(dir.log_path(), next);
  bool holding = false;  // the supervisor served records from memory lately
  bool quiet = false;    // the last wait saw no change on disk
  // Sends the held records that continue at `next` (before `before_seq`); nullopt if the
  // reader went away, else whether there were any.
  auto send_held = [&](uint64_t before_seq) -> std::optional<bool> {
    if (snap.supervisor_pid <= 0) return false;
    std::vector<LogRecord> held = FetchHeldRecords(home, snap.supervisor_pid, next);
    if (held.empty() || held.front().seq != next) return false;
    std::vector<LogRecord> batch;
    size_t bytes = 0;
    for (LogRecord& r : held) {
      if (r.seq != next || r.seq >= before_seq) break;
      bytes += r.data.size();
      next = r.seq + 1;
      batch.push_back(std::move(r));
      if (bytes >= kLogBatchBytes) {
        if (!sink.Records(std::move(batch))) return std::nullopt;
        batch.clear();
        bytes = 0;
      }
    }
    if (!batch.empty() && !sink.Records(std::move(batch))) return std::nullopt;
    return true;
  };
  while (true) {
    // Taken before reading: if the job had ended by then, the read sees every record.
    const bool ended = snap.exit.has_value();
    std::vector<LogRecord> records = reader.ReadSome();
    if (!records.empty()) {
      std::vector<LogRecord> batch;
      for (LogRecord& r : records) {
        if (r.seq < next) continue;  // sent already (from the supervisor's memory)
        if (r.seq > next) {  // a gap on disk: the supervisor may still hold what it replaced
          if (!batch.empty() && !sink.Records(std::move(batch)))
            return JobLogStreamEnd::kReaderGone;
          batch.clear();
          if (!send_held(r.seq + 1)) return JobLogStreamEnd::kReaderGone;
          if (r.seq < next) continue;
        }
        next = r.seq + 1;
        batch.push_back(std::move(r));
      }
      if (!batch.empty() && !sink.Records(std::move(batch))) return JobLogStreamEnd::kReaderGone;
      holding = quiet = false;
      continue;
    }
    // Nothing new on disk: what the supervisor holds in memory (a full disk) comes next, if
    // anything. Asked only once the disk has been quiet, so a busy log costs no requests.
    if (ended || quiet || holding) {
      auto held = send_held(UINT64_MAX);
      if (!held) return JobLogStreamEnd::kReaderGone;
      holding = *held || (holding && quiet);
      if (*held) continue;
    }
    if (ended) {
      return sink.End(*snap.exit, snap.gap) ? JobLogStreamEnd::kEnded
                                            : JobLogStreamEnd::kReaderGone;
    }
    if (!follow) return JobLogStreamEnd::kCaughtUp;
    if (!keep_going()) return JobLogStreamEnd::kInterrupted;
    // Output held in memory arrives without a change on disk: look again soon.
    quiet = !watch.Wait(Clock::now() + (holding ? kHeldCheckInterval : kFollowCheckInterval));
    // The log's own growth wakes this loop often while a job prints: then only the exit status
    // is looked at. The whole state (a vanished supervisor makes the job lost) when quiet.
    if (quiet) {
      snap = ReadJobSnapshot(dir, /*count_records=*/false);
    } else if ((snap.exit = dir.ReadProcessEnd())) {
      snap.gap = dir.ReadLogGap();  // written before the exit status
    }
  }
}

}  // namespace podrun::agent
