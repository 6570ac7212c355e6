// Reading a job attempt's state from its files (see job_state.h).
#include "worker/jobdir/job_state.h"

#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>

#include <cstdio>
#include <thread>

#include "proto/log_record.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kFallbackPoll = std::chrono::milliseconds(50);

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Ends what the vanished supervisor left of the job and records it as lost.
ProcessEnd RecordLost(const JobDir& dir) {
  if (auto leader = dir.ReadJobProcess()) SignalGroup(*leader, SIGKILL);
  ProcessEnd lost;
  lost.lost = true;
  lost.end_time_ns = NowNs();
  try {
    dir.WriteProcessEnd(lost);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "podrun-agent: %s: %s\n", dir.path().c_str(), e.what());
  }
  return lost;
}

}  // namespace

JobSnapshot ReadJobSnapshot(const JobDir& dir, bool count_records) {
  JobSnapshot snap;
  snap.worker_id = dir.ReadWorkerId().value_or(0);
  snap.pid = dir.ReadPid().value_or(0);
  snap.start_time_ns = dir.ReadStartTime().value_or(0);
  const auto supervisor = dir.ReadSupervisor();
  snap.supervisor_pid = supervisor ? supervisor->pid : 0;
  snap.exit = dir.ReadProcessEnd();
  if (!snap.exit) {
    snap.supervisor_alive = supervisor && supervisor->Alive();
    // Checked after the liveness: a supervisor records the outcome before it exits.
    snap.exit = dir.ReadProcessEnd();
    if (!snap.exit && !snap.supervisor_alive) {
      if (supervisor || snap.pid > 0) snap.exit = RecordLost(dir);
    }
  }
  snap.gap = dir.ReadLogGap();  // after the exit status, which is written after it
  if (count_records) snap.last_seq = LastSeqInLog(dir.log_path());
  if (snap.exit) {
    snap.state = snap.exit->lost ? JobState::kLost
                 : snap.exit->stopped_by_request || snap.exit->start_unconfirmed
                     ? JobState::kStopped
                     : JobState::kExited;
  } else if (snap.supervisor_alive) {
    snap.state = snap.pid > 0 ? JobState::kRunning : JobState::kPrepared;
  }
  return snap;
}

JobDirWatch::JobDirWatch(const JobDir& dir) : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
  if (fd_ && ::inotify_add_watch(fd_.get(), dir.path().c_str(),
                                 IN_MODIFY | IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE) < 0) {
    fd_.reset();
  }
}

bool JobDirWatch::Wait(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return false;
  if (!fd_) {
    std::this_thread::sleep_for(std::min<Clock::duration>(left, kFallbackPoll));
    return true;  // unknown: look
  }
  pollfd p{fd_.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
  char buf[4096];
  while (::read(fd_.get(), buf, sizeof buf) > 0) {
  }
  return true;
}

}  // namespace podrun::agent
