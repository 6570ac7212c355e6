// PhaseFanOut: the phases of an attempt before its start, each fanned out to every worker still
// in the attempt: connect (and install the agent), the TPU worker-number check, sync, mounts,
// setup, prepare, and the lockstep start. A phase that fails on a worker sets its error and the
// worker takes part in no later phase; the live line shows each phase's progress, and each
// worker's times in the phases that ran are recorded (PhaseTimes: agents, sync, mounts, setup,
// start = prepare to start). Sync and mounts are phases of their own (SyncPhase, MountsPhase)
// that it runs in turn.
// Call the phases from one thread, in order; each waits for all its workers.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt/attempt_plan.h"
#include "launcher/attempt/attempt_worker.h"
#include "launcher/attempt/mounts_phase.h"
#include "launcher/attempt/phase_progress.h"
#include "launcher/attempt/phase_times.h"
#include "launcher/attempt/sync_phase.h"

namespace podrun {

class PhaseFanOut {
 public:
  PhaseFanOut(const AttemptPlan& plan, AttemptRecorder& recorder, AttemptWorkers& workers)
      : plan_(plan),
        recorder_(recorder),
        workers_(workers),
        times_(recorder, workers),
        progress_(workers, times_),
        sync_(plan, workers),
        mounts_(plan, workers) {}

  // Builds the manifest of the spec's sync (before anything is started); false (said why) on
  // error.
  bool BuildSyncManifest() { return sync_.BuildManifest(); }

  // Draws the live line of the phases (on a terminal) from now on.
  void StartProgress() { progress_.Start(); }
  // Ends the live line (before the job's or the setup's output, or the report).
  void EndProgress() { progress_.End(); }

  // Connects every worker's agent (installing it where missing) and measures its clock.
  void ConnectAll();
  // On Cloud TPU VMs given by --hosts: refuses an order of hosts that contradicts the VMs' TPU
  // worker numbers (said, naming which host is which worker). True if the ranks may stand.
  bool CheckTpuWorkerNumbers();
  void SyncAll();   // the spec's sync
  void MountAll();  // the spec's mounts, the nfs servers first
  void SetupAll();  // the spec's setup (cached by its stamp)
  void PrepareAll();
  // Starts every worker still in at one instant (each agent's clock corrected by its offset),
  // scheduled as far ahead as a fan-out to every worker was measured to take just before
  // (StartLead); then, once every Start was answered, confirms the gang's start to every worker
  // (each agent stops a started job that is not confirmed in StartConfirmWindow: a launcher lost
  // between two workers' Start leaves no gang running in part).
  void StartAll();
  // Ends the prepared processes (after a failed barrier: GO never comes).
  void ReleasePrepared();

 private:
  // How long one light RPC (Hello) to every worker still in, all sent at once as Start will be,
  // took from the first send to the last answer.
  std::chrono::nanoseconds MeasureReach();
  // Confirm to every started worker, in parallel, when the gang started whole (or the spec
  // says on_failure: continue); a worker it cannot reach stops its job after `window`.
  void ConfirmStarts(std::chrono::milliseconds window);

  const AttemptPlan& plan_;
  AttemptRecorder& recorder_;
  AttemptWorkers& workers_;
  PhaseTimes times_;  // before progress_, which reports to it
  PhaseProgress progress_;
  SyncPhase sync_;
  MountsPhase mounts_;
  bool tpu_vms_ = false;  // the agents run on Cloud TPU VMs (their metadata says so)
};

}  // namespace podrun
