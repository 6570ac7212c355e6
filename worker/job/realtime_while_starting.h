// RealtimeWhileStarting: a real-time priority for the thread that releases a job at the
// lockstep instant (job_runner.h), held only while it sleeps until then and writes one byte.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstring>

namespace podrun::agent {

// SCHED_FIFO for the calling thread until Drop(), where the agent may have it (root,
// CAP_SYS_NICE or an RLIMIT_RTPRIO); else nothing. All workers of a pod wake at one instant;
// with a normal priority, a worker's wake-up can queue behind the jobs that other agents on
// the same host (a test pod) have just released (a login shell is tens of ms of CPU), or
// behind other load: 16 agents on 2 cores start 15-35 ms apart, and within 1 ms with this.
// Under it the thread only sleeps, then writes one byte.
class RealtimeWhileStarting {
 public:
  RealtimeWhileStarting() {
    if (::pthread_getschedparam(::pthread_self(), &policy_, &param_) != 0) return;
    sched_param realtime{};
    realtime.sched_priority = ::sched_get_priority_min(SCHED_FIFO);
    raised_ = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &realtime) == 0;
  }
  ~RealtimeWhileStarting() { Drop(); }
  RealtimeWhileStarting(const RealtimeWhileStarting&) = delete;
  RealtimeWhileStarting& operator=(const RealtimeWhileStarting&) = delete;

  // Back to the thread's own policy (before it creates threads, which would inherit it).
  void Drop() {
    if (!raised_) return;
    raised_ = false;
    if (const int rc = ::pthread_setschedparam(::pthread_self(), policy_, &param_); rc != 0) {
      std::fprintf(stderr, "podrun-agent: a job's start cannot drop its real-time priority: %s\n",
                   std::strerror(rc));
    }
  }

 private:
  int policy_ = SCHED_OTHER;
  sched_param param_{};
  bool raised_ = false;
};

}  // namespace podrun::agent
