// The job's end as the supervisor records it in the job's directory: the log finished, then its
// gap (log_gap.h), then the exit status (fsync'd, renamed into place), so that whoever sees the
// exit status sees the gap too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/process_end.h"
#include "worker/jobdir/job_dir.h"
#include "worker/supervisor/log_writer.h"

namespace podrun::agent {

// What the supervisor knows of the job's end once its group is gone.
struct JobEnd {
  std::optional<int> wait_status;  // the leader's, from waitpid; none if it was never reaped
  int64_t end_time_ns = 0;         // the wall clock when it was reaped; 0: not reaped
  bool never_started = false;      // its child ended without running (kNotStarted)
  bool discarded = false;          // DISCARD was asked: a new Prepare replaced the attempt
  bool stop_requested = false;
  bool killed = false;  // a requested stop needed SIGKILL
  // Its start was never confirmed in time: the supervisor stopped it (start_confirmation.h).
  bool start_unconfirmed = false;
};

// Writes the end of one job attempt into `dir`, after finishing `writer`'s log. One thread.
class ExitRecorder {
 public:
  ExitRecorder(const JobDir& dir, LogWriter& writer) : dir_(dir), writer_(writer) {}

  // Records `end`, unless the job never started and was discarded (the supervisor of the new
  // Prepare records the attempt): the log finished, the disk reserve freed, the gap (if any)
  // and the exit status written. Never throws: returns what could not be written, to be said.
  std::vector<std::string> Record(const JobEnd& end);

  // The exit status `end` records; `now_ns` stands for an end time never taken.
  static ProcessEnd ToProcessEnd(const JobEnd& end, int64_t now_ns);

 private:
  const JobDir& dir_;
  LogWriter& writer_;
};

}  // namespace podrun::agent
