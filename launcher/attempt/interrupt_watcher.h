// InterruptWatcher: takes Ctrl-C (SIGINT) on a thread of its own for the lifetime of an attempt.
// The constructor blocks SIGINT in the calling thread, so create it before any other thread of
// the attempt: threads created afterwards inherit the mask, and SIGINT then reaches only the
// watcher (through sigtimedwait). It also ignores SIGPIPE for the process (the SSH tunnels and
// gRPC write to sockets whose peers may be gone). Each Ctrl-C is also noted process-wide
// (proto/interrupt_note.h), so that a wait on a child program (gcloud) ends at once, and while
// the watcher runs such children get a process group of their own, stopped on a Ctrl-C.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace podrun {

class InterruptWatcher {
 public:
  // Calls `on_interrupt` on the watcher's thread for each SIGINT until Stop().
  explicit InterruptWatcher(std::function<void()> on_interrupt);
  // Stops the watcher (see Stop).
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

  // Returns once the watcher's thread has ended: no on_interrupt call runs after it. SIGINT
  // stays blocked. Idempotent.
  void Stop();

 private:
  std::function<void()> on_interrupt_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Sleeps for `wait`; false when Ctrl-C came first (noted as the watcher notes it). For a thread
// in which SIGINT is blocked (as in an attempt's threads): it takes SIGINT with sigtimedwait.
bool SleepUnlessInterrupted(std::chrono::milliseconds wait);

}  // namespace podrun
