// The keeper: the process on the launching machine that watches a detached job (`launch -d` or
// `rerun -d` of a spec with `restarts:`, or `podrun watch`; docs/reference.md, "Provisioning and
// recovery"). It is the attached launch's loop without a terminal (docs/design.md decision 16):
// it follows the running attempt, stops the gang on a failure, restarts it as `restarts:` says
// (counted since the last launch or rerun), recreates a preempted node, and records all of it.
// One keeper per job (KeeperLock); it records its identity (pid, start time, boot id, host) so
// that others find and signal that very process, never a pid read from somewhere.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "launcher/base/error.h"
#include "launcher/recovery/keeper_lock.h"
#include "launcher/recovery/keeper_signals.h"
#include "launcher/store/job_store.h"

namespace podrun {

class Keeper {
 public:
  // Becomes the keeper of `job_id`: nullopt when another process is. Takes SIGTERM from now on
  // (KeeperSignals): call it before any other thread starts.
  static std::optional<Keeper> Acquire(const std::filesystem::path& home,
                                       const std::string& job_id);

  // Watches the job until it ends or the restarts are used up (a heartbeat in the store every
  // 10 s meanwhile); then records why it ended. Returns the job's exit code. A job with no
  // attempt left to watch (succeeded, stopped, never started) ends at once (kOk).
  ExitCode Run(JobStore& store, const JobRecord& job);

 private:
  Keeper(std::filesystem::path home, KeeperLock lock, std::unique_ptr<KeeperSignals> signals)
      : home_(std::move(home)), lock_(std::move(lock)), signals_(std::move(signals)) {}

  std::filesystem::path home_;
  KeeperLock lock_;
  // SIGTERM during a recovery gives it up cleanly (keeper_signals.h); from Acquire on, before
  // any other thread of the keeper.
  std::unique_ptr<KeeperSignals> signals_;
};

// Starts `podrun watch JOB --foreground` detached from this terminal and process (a session of
// its own, stdin /dev/null, stdout and stderr appended to jobs/<id>/keeper.log), with this
// process's environment (the spec's secret_env values among it: never written anywhere). Waits
// until it holds the job's keeper lock; returns its pid. Throws Error(kFailed) when it could not
// start or ended at once (its log says why).
int SpawnKeeper(const std::filesystem::path& home, const std::string& job_id);

// The job's keeper running on this machine: the process holding its lock whose identity (pid,
// start time, boot id) is the one it recorded. nullopt when none runs, or when the lock's holder
// cannot be identified (another pid namespace, a recycled pid): such a process is never
// signalled. Never call it from the keeper itself (keeper_lock.h).
struct RunningKeeper {
  int pid = 0;
  std::string host;
};
std::optional<RunningKeeper> FindKeeper(JobStore& store, const std::filesystem::path& home,
                                        const std::string& job_id);

// Ends the job's running keeper (SIGTERM through a pidfd of the identified process), waits for
// its lock to be released (up to 2 min: a keeper in a recovery deletes what it queued first;
// keeper_signals.h), and records `note` as why it ended. False when none ran.
bool EndKeeper(JobStore& store, const std::filesystem::path& home, const std::string& job_id,
               const std::string& note);

}  // namespace podrun
