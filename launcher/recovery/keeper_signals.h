// KeeperSignals: the keeper's SIGTERM (`podrun stop`, `podrun down`; docs/reference.md, "The
// keeper"). While the keeper follows or starts an attempt, SIGTERM ends it at once, as before
// (`stop` then stops the workers itself). While it recovers between two attempts (recreating a
// TPU node or a MIG slice, waiting for one, the restart's backoff), SIGTERM gives the recovery up
// instead: the running gcloud is stopped, every wait ends, the provisioner deletes what its
// create made (a queued resource; a MIG slice's group, and the template and policy podrun made
// for it), and the keeper records the job stopped before it exits, so that a stop never leaves
// capacity or quota held nor a job that reads `recovering` for ever.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

#include "launcher/recovery/wait_cancel.h"

namespace podrun {

class KeeperSignals {
 public:
  // Blocks SIGTERM in the calling thread and takes it on a thread of its own: create it before
  // any other thread of the keeper, so that they all inherit the mask.
  KeeperSignals();
  ~KeeperSignals();
  KeeperSignals(const KeeperSignals&) = delete;
  KeeperSignals& operator=(const KeeperSignals&) = delete;

  // A recovery begins: from now on SIGTERM gives it up. False when a stop came already.
  bool EnterRecovery();
  // The recovery is over: SIGTERM ends the keeper again. False when a stop came during it (the
  // caller then records the job stopped and ends).
  bool LeaveRecovery();

  // The recovery's waits: given up by SIGTERM, or by a Ctrl-C (`watch --foreground` in a
  // terminal) as SleepUnlessInterrupted.
  ProvisionWait wait();

 private:
  void OnTerm();

  std::mutex mutex_;
  bool recovering_ = false;      // guarded by mutex_
  bool stop_requested_ = false;  // guarded by mutex_
  WaitCancel cancel_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace podrun
