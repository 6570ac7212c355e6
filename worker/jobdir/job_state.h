// A job attempt's state as its files tell it (job_dir.h), whoever wrote them: this agent's
// supervisors or an earlier agent's. This is how an agent adopts running jobs: it reads them.
// A job whose supervisor vanished without recording an outcome is lost; the first reader that
// notices records it (and ends what remains of the job's process group).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "proto/unique_fd.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/log_gap.h"

namespace podrun::agent {

enum class JobState { kUnknown, kPrepared, kRunning, kExited, kStopped, kLost };

struct JobSnapshot {
  JobState state = JobState::kUnknown;
  pid_t pid = 0;  // also the process group id; 0 before Start
  int64_t start_time_ns = 0;
  uint32_t worker_id = 0;
  uint64_t last_seq = 0;           // last record written to the log
  std::optional<ProcessEnd> exit;  // set once the job has ended
  std::optional<LogGapInfo> gap;   // output that could not be written to disk
  pid_t supervisor_pid = 0;        // 0 if none is known
  bool supervisor_alive = false;
};

// Reads the attempt's state. If its supervisor is gone without an exit status, records the job
// as lost (exit_status "lost 1") after ending what remains of its process group.
// `count_records`: also find the log's last sequence number (reads every record header).
JobSnapshot ReadJobSnapshot(const JobDir& dir, bool count_records = true);

// Wakes up when a file of the job directory changes (inotify), or at a deadline. Falls back to
// short sleeps where inotify cannot be had.
class JobDirWatch {
 public:
  explicit JobDirWatch(const JobDir& dir);
  // True if something changed before the deadline.
  bool Wait(std::chrono::steady_clock::time_point deadline);

 private:
  UniqueFd fd_;
};

}  // namespace podrun::agent
