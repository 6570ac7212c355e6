// See wait_cancel.h.
#include "launcher/recovery/wait_cancel.h"

#include "proto/interrupt_note.h"

namespace podrun {

void WaitCancel::Cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  NoteInterrupt();  // a gcloud running now is stopped (RunProgram)
  cv_.notify_all();
}

bool WaitCancel::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

bool WaitCancel::Sleep(std::chrono::milliseconds wait) {
  std::unique_lock lock(mutex_);
  return !cv_.wait_for(lock, wait, [this] { return cancelled_; });
}

}  // namespace podrun
