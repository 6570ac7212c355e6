// WaitCancel: gives up the long waits of provisioning and recovery at once and for good, when
// the user asks (a Ctrl-C during `up` or a launch's provisioning, a SIGTERM to the keeper from
// `podrun stop` or `podrun down`; docs/reference.md, "Provisioning and recovery"). Sticky: a
// cancel that comes between two waits ends the next one, and every later one, at once. It also
// notes an interrupt (proto/interrupt_note.h), so that a gcloud running meanwhile is stopped.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "launcher/recovery/provisioner.h"

namespace podrun {

class WaitCancel {
 public:
  // Gives up every wait, now and later. Any thread (not from a signal handler).
  void Cancel();
  bool cancelled() const;

  // Sleeps for `wait`; false when cancelled, before or during.
  bool Sleep(std::chrono::milliseconds wait);
  // Sleep as a ProvisionWait; the WaitCancel must outlive it.
  ProvisionWait AsWait() {
    return [this](std::chrono::milliseconds wait) { return Sleep(wait); };
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool cancelled_ = false;  // guarded by mutex_
};

}  // namespace podrun
