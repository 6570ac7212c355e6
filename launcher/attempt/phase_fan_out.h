// PhaseFanOut: the phases of an attempt before its start, each fanned out to every worker still
// in the attempt: connect (and install the agent), the TPU worker-number check, sync, mounts,
// setup, prepare, and the lockstep start. A phase that fails on a worker sets its error and the
// worker takes part in no later phase; the live line shows each phase's progress.
// Call the phases from one thread, in order; each waits for all its workers.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/output/live_progress.h"
#include "launcher/sync/manifest.h"

namespace podrun {

class PhaseFanOut {
 public:
  PhaseFanOut(const AttemptPlan& plan, AttemptRecorder& recorder, AttemptWorkers& workers)
      : plan_(plan), recorder_(recorder), workers_(workers) {}

  // Builds the manifest of the spec's sync (before anything is started); false (said why) on
  // error.
  bool BuildSyncManifest();

  // Draws the live line of the phases (on a terminal) from now on.
  void StartProgress() { progress_.emplace(STDERR_FILENO); }
  // Ends the live line (before the job's or the setup's output, or the report).
  void EndProgress() {
    if (progress_) progress_->End();
  }

  // Connects every worker's agent (installing it where missing) and measures its clock.
  void ConnectAll();
  // On Cloud TPU VMs given by --hosts: refuses an order of hosts that contradicts the VMs' TPU
  // worker numbers (said, naming which host is which worker). True if the ranks may stand.
  bool CheckTpuWorkerNumbers();
  void SyncAll();   // the spec's sync
  void MountAll();  // the spec's mounts, the nfs servers first
  void SetupAll();  // the spec's setup (cached by its stamp)
  void PrepareAll();
  // Starts every worker still in at one instant (each agent's clock corrected by its offset).
  void StartAll();
  // Ends the prepared processes (after a failed barrier: GO never comes).
  void ReleasePrepared();

 private:
  // The addresses the workers reach each other at, rank order (PODRUN_WORKER_HOSTS).
  std::vector<std::string> WorkerAddresses() const;
  // Starts a phase of the live line over the workers still in.
  void BeginProgress(const std::string& phase);
  // Marks worker `index` through the current phase of the live line.
  void Progressed(int index) {
    if (progress_) progress_->Done(index);
  }

  const AttemptPlan& plan_;
  AttemptRecorder& recorder_;
  AttemptWorkers& workers_;
  std::optional<LiveProgress> progress_;
  std::optional<Manifest> manifest_;  // of the spec's sync, if it has one
  bool tpu_vms_ = false;              // the agents run on Cloud TPU VMs (their metadata says so)
  std::chrono::nanoseconds prepare_fan_out_{0};  // how long Prepare to every worker took
};

}  // namespace podrun
