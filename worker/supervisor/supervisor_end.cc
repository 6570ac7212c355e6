// The supervisor's end: what remains of the job's group stopped (grace, then SIGKILL), the
// end recorded, and readers of held output waited for.
#include "worker/supervisor/supervisor_process.h"

namespace podrun::agent::supervisor_internal {

void Supervisor::Finalize() {
  // What remains of the group (its stdio closed) goes too, after a requested stop's grace.
  const auto kill_at = term_sent_ ? kill_at_ : Clock::now();
  while (ReapChildren(), GroupAlive(child_) && Clock::now() < kill_at) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  if (GroupAlive(child_)) {
    ::kill(-child_, SIGKILL);
    killed_ = killed_ || term_sent_;
    const auto deadline = Clock::now() + kKillWait;
    while (ReapChildren(), GroupAlive(child_) && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  const bool never_started = report_ && report_->step == kNotStarted;
  if (never_started && discard_) return;  // replaced: the new supervisor records the attempt
  ProcessEnd exit;
  const int status = wait_status_.value_or(255 << 8);
  if (never_started) {
    exit.never_started = true;
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit.end_time_ns = end_time_ns_ ? end_time_ns_ : WallClockNs();
  exit.stopped_by_request = stop_requested_;
  exit.killed = killed_;
  writer_->Finish(WallClockNs());
  ::unlink(dir_.reserve_path().c_str());  // room for the outcome, in any case
  // The gap first: whoever sees the exit status sees the gap too.
  if (auto gap = writer_->gap(); gap && gap->chunks > 0) {
    try {
      dir_.WriteLogGap(*gap);
    } catch (const std::exception& e) {
      Say(e.what());
    }
  }
  try {
    dir_.WriteProcessEnd(exit);
  } catch (const std::exception& e) {
    Say(e.what());
  }
}

void Supervisor::Linger() {
  const auto deadline = Clock::now() + kLingerForReaders;
  // Also until the clients being served have their replies (or are overdue).
  EndClients();
  while ((!writer_->Held(fetched_through_ + 1, 1).empty() || !clients_.empty()) &&
         Clock::now() < deadline) {
    pollfd fds[kMaxClients + 1];
    int kinds[kMaxClients + 1];
    const nfds_t n = AddControlFds(fds, kinds, 0);
    const int rc = ::poll(fds, n, MsUntil(std::min(deadline, ClientsDeadline())));
    if (rc < 0 && errno != EINTR) {
      Say(ErrnoMessage("poll"));
      return;
    }
    for (nfds_t i = 0; rc > 0 && i < n; ++i) {
      if (fds[i].revents) OnControl(kinds[i]);
    }
    EndClients();
  }
}

}  // namespace podrun::agent::supervisor_internal
