// The keeper: the process on the launching machine that watches a detached job (`launch -d` or
// `rerun -d` of a spec with `restarts:`, or `podrun watch`; docs/reference.md, "Provisioning and
// recovery"). It is the attached launch's loop without a terminal (docs/design.md decision 16):
// it follows the running attempt, stops the gang on a failure, restarts it as `restarts:` says
// (counted since the last launch or rerun), recreates a preempted node, and records all of it.
// One driver per job (DriverLock: a keeper, or an attached launch or rerun); the keeper records
// its identity (pid, start time, boot id, host) so that others find and signal that very
// process, never a pid read from somewhere. It depends on nothing of the terminal it was started
// from (docs/design.md decision 21): the spec's paths are the absolute ones recorded at launch
// (RecordedSpec), its environment an allow-list (keeper_env.h), and it resumes every worker's
// log where the launcher's copy ends.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/keeper_signals.h"
#include "launcher/store/job_store.h"

namespace podrun {

class Keeper {
 public:
  // Becomes the keeper of `job_id`: nullopt when another process drives it (CurrentDriver).
  // Takes SIGTERM from now on (KeeperSignals): call it before any other thread starts.
  static std::optional<Keeper> Acquire(const std::filesystem::path& home,
                                       const std::string& job_id);

  // Watches the job until it ends or the restarts are used up (a heartbeat in the store every
  // 10 s meanwhile); then records why it ended (an exception out of it included: its message).
  // Returns the job's exit code. A job with no attempt left to watch (succeeded, stopped, never
  // started) ends at once (kOk); a latest attempt that already failed (a detached start that
  // failed, an attempt that failed while nobody watched) is restarted as restarts: says.
  ExitCode Run(JobStore& store, const JobRecord& job);

 private:
  Keeper(std::filesystem::path home, DriverLock lock, std::unique_ptr<KeeperSignals> signals)
      : home_(std::move(home)), lock_(std::move(lock)), signals_(std::move(signals)) {}
  ExitCode Keep(JobStore& store, JobRecord job, const std::vector<AttemptRecord>& attempts);

  std::filesystem::path home_;
  DriverLock lock_;
  // SIGTERM during a recovery gives it up cleanly (keeper_signals.h); from Acquire on, before
  // any other thread of the keeper.
  std::unique_ptr<KeeperSignals> signals_;
};

// Starts `podrun watch JOB --foreground` detached from this terminal and process (a session of
// its own, stdin /dev/null, stdout and stderr appended to jobs/<id>/keeper.log, its current
// folder /), with the allow-listed part of this process's environment (KeeperEnvironment: the
// values of `secret_names` among it, never written anywhere). Waits until it holds the job's
// driver lock; returns its pid. Throws Error(kFailed) when it could not start or ended at once
// (its log says why). The caller must not hold the job's DriverLock.
int SpawnKeeper(const std::filesystem::path& home, const std::string& job_id,
                const std::vector<std::string>& secret_names);

// Ends the job's running keeper (the lock's holder whose identity, pid, start time and boot id,
// is the one it recorded; never a holder that cannot be identified) with SIGTERM through a
// pidfd, waits for its lock to be released (up to 2 min: a keeper in a recovery deletes what it
// queued first; keeper_signals.h), and records `note` as why it ended. False when none ran.
bool EndKeeper(JobStore& store, const std::filesystem::path& home, const std::string& job_id,
               const std::string& note);

}  // namespace podrun
