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
// After the supervisor last served records from memory, how long it is looked at that often.
constexpr auto kHeldRecently = std::chrono::seconds(2);

}  // namespace

JobLogStreamEnd StreamJobLog(const std::filesystem::path& home, const JobDir& dir, JobSnapshot snap,
                             uint64_t from_seq, bool follow, JobLogSink& sink,
                             const std::function<bool()>& keep_going) {
  JobDirWatch watch(dir);
  uint64_t next = std::max<uint64_t>(from_seq, 1);
  LogReader reader(dir.log_path(), next);
  auto held_at = Clock::time_point::min();  // the supervisor last served records from memory
  bool quiet = false;                       // the last wait saw no change on disk
  // What the supervisor holds in memory (a full disk) from `next` on; asking tells it that
  // every record before `next` was delivered.
  auto fetch_held = [&]() -> std::vector<LogRecord> {
    if (snap.supervisor_pid <= 0) return {};
    return FetchHeldRecords(home, snap.supervisor_pid, next);
  };
  // Sends the contiguous records of `held` before `before_seq`. Records between `next` and the
  // first of them are gone from memory, and the caller has made sure they are not on disk: they
  // are the gap, skipped. nullopt if the reader went away, else whether any were sent.
  auto send_held = [&](std::vector<LogRecord>&& held, uint64_t before_seq) -> std::optional<bool> {
    std::vector<LogRecord> batch;
    size_t bytes = 0;
    bool sent = false;
    for (LogRecord& r : held) {
      if (r.seq < next) continue;
      if (r.seq >= before_seq || (sent && r.seq != next)) break;
      bytes += r.data.size();
      next = r.seq + 1;
      sent = true;
      batch.push_back(std::move(r));
      if (bytes >= kLogBatchBytes) {
        if (!sink.Records(std::move(batch))) return std::nullopt;
        batch.clear();
        bytes = 0;
      }
    }
    if (!batch.empty() && !sink.Records(std::move(batch))) return std::nullopt;
    if (sent) held_at = Clock::now();
    return sent;
  };
  // Sends what was read from disk; false if the reader went away.
  auto send_disk = [&](std::vector<LogRecord>&& records) {
    std::vector<LogRecord> batch;
    for (LogRecord& r : records) {
      if (r.seq < next) continue;  // sent already (from the supervisor's memory)
      // A gap on disk, or a marker that stands for records up to its own seq: the supervisor may
      // still hold what it replaced.
      if (r.seq > next || (r.seq == next && IsGapMarker(r))) {
        if (!batch.empty() && !sink.Records(std::move(batch))) return false;
        batch.clear();
        // What it holds before this record, a few MiB per request, until it holds no more.
        while (next <= r.seq) {
          const std::optional<bool> sent = send_held(fetch_held(), r.seq + 1);
          if (!sent) return false;
          if (!*sent) break;
        }
        if (r.seq < next) continue;
      }
      next = r.seq + 1;
      batch.push_back(std::move(r));
    }
    return batch.empty() || sink.Records(std::move(batch));
  };
  while (true) {
    // Taken before reading: if the job had ended by then, the read sees every record.
    const bool ended = snap.exit.has_value();
    if (std::vector<LogRecord> records = reader.ReadSome(); !records.empty()) {
      if (!send_disk(std::move(records))) return JobLogStreamEnd::kReaderGone;
      quiet = false;
      continue;
    }
    // Nothing new on disk: what the supervisor holds in memory (a full disk) comes next, if
    // anything. Asked only once the disk has been quiet, so a busy log costs no requests.
    // Never held yet (min()) reads as holding, as it always has; now() - min() would overflow.
    const bool holding =
        held_at == Clock::time_point::min() || Clock::now() - held_at < kHeldRecently;
    if (ended || quiet || holding) {
      std::vector<LogRecord> held = fetch_held();
      if (!held.empty() && held.front().seq > next) {
        // What comes before the first record held is on disk by now (the supervisor writes a
        // record before it lets it go), or is gone: the disk is looked at again first.
        if (std::vector<LogRecord> more = reader.ReadSome(); !more.empty()) {
          if (!send_disk(std::move(more))) return JobLogStreamEnd::kReaderGone;
          continue;
        }
      }
      const std::optional<bool> sent = send_held(std::move(held), UINT64_MAX);
      if (!sent) return JobLogStreamEnd::kReaderGone;
      if (*sent) continue;
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
