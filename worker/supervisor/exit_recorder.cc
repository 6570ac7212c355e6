// The job's end as the supervisor records it (see exit_recorder.h).
#include "worker/supervisor/exit_recorder.h"

#include <sys/wait.h>
#include <unistd.h>

#include <exception>

#include "worker/base/wall_clock.h"

namespace podrun::agent {

ProcessEnd ExitRecorder::ToProcessEnd(const JobEnd& end, int64_t now_ns) {
  ProcessEnd exit;
  const int status = end.wait_status.value_or(255 << 8);
  if (end.never_started) {
    exit.never_started = true;
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit.end_time_ns = end.end_time_ns ? end.end_time_ns : now_ns;
  exit.stopped_by_request = end.stop_requested;
  exit.killed = end.killed;
  exit.start_unconfirmed = end.start_unconfirmed;
  return exit;
}

std::vector<std::string> ExitRecorder::Record(const JobEnd& end) {
  std::vector<std::string> problems;
  if (end.never_started && end.discarded) return problems;
  const ProcessEnd exit = ToProcessEnd(end, WallClockNs());
  writer_.Finish(WallClockNs());
  ::unlink(dir_.reserve_path().c_str());  // room for the outcome, in any case
  // The gap first: whoever sees the exit status sees the gap too.
  if (auto gap = writer_.gap(); gap && gap->chunks > 0) {
    try {
      dir_.WriteLogGap(*gap);
    } catch (const std::exception& e) {
      problems.emplace_back(e.what());
    }
  }
  try {
    dir_.WriteProcessEnd(exit);
  } catch (const std::exception& e) {
    problems.emplace_back(e.what());
  }
  return problems;
}

}  // namespace podrun::agent
