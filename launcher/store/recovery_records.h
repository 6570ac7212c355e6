// RecoveryRecords: the job store's record of recovery (docs/reference.md, "Provisioning and
// recovery"): preemptions of a job's TPU nodes, the keeper that watches it, what a job between
// attempts waits for, and the recreations podrun has begun. Shares its JobStore's connection;
// the same threading rules apply (one object from one thread at a time). Errors as JobStore's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/job_store.h"
#include "launcher/store/store_database.h"

namespace podrun {

// A preemption of the job's TPU node, seen after (and ending) attempt `attempt`.
struct PreemptionRecord {
  int64_t id = 0;
  int attempt = 0;
  std::string node;
  std::string state;  // what gcloud said: PREEMPTED, TERMINATED, SUSPENDED, FAILED
  int64_t seen_ns = 0;
  std::optional<int64_t> back_ns;  // READY again
  bool recreated = false;          // podrun deleted and created the node
};

// The process that watches a detached job (`launch -d` with restarts:, `podrun watch`).
struct KeeperRecord {
  int pid = 0;
  std::string identity;  // ProcessIdentity::ToString(): pid, start time, boot id
  std::string host;      // the machine it runs on (hostname)
  int64_t started_ns = 0;
  int64_t heartbeat_ns = 0;  // its last sign of life
  std::optional<int64_t> ended_ns;
  std::string end_note;  // why it ended, when it said so
};

// What a job being healed is doing now (`status --json`: recovering.phase).
enum class RecoveringPhase {
  kAsking,      // asking the API what happened to a lost worker
  kWaiting,     // waiting for a slice to be READY (repairing, being made by someone else)
  kRecreating,  // podrun deleting and creating a preempted slice
  kApiOutage,   // waiting out the API's failures
  kRestarting,  // the backoff before the gang restarts after a failure
};

// "asking", "waiting", "recreating", "api-outage", "restarting".
const char* RecoveringPhaseName(RecoveringPhase phase);

// A job between two attempts while podrun heals its pod: what it waits for, since when.
struct RecoveringRecord {
  RecoveringPhase phase = RecoveringPhase::kWaiting;
  std::string slice;  // the slice it is about ("tpu node-1", "mig slice-1"); "": the whole pod
  std::string what;   // for people, e.g. "recreating TPU node node-1 (PREEMPTED)"
  int64_t since_ns = 0;
};

// A recreation podrun began: the slice it deleted (or is about to), to be created again.
struct RecreationRecord {
  std::string kind;  // "tpu" or "mig" (PodSourceKindName)
  std::string node;  // the slice's name
  std::string zone;
  std::string project;
  int64_t began_ns = 0;
};

class RecoveryRecords {
 public:
  explicit RecoveryRecords(JobStore& store) : db_(store.database()) {}

  // Records a preemption seen now (or at `seen_ns`); returns its id.
  int64_t AddPreemption(const std::string& job_id, const PreemptionRecord& preemption);
  // The node of preemption `id` is READY again.
  void SetPreemptionBack(int64_t id, int64_t back_ns = NowUnixNs());
  // The job's preemptions, oldest first.
  std::vector<PreemptionRecord> Preemptions(const std::string& job_id);

  // The job's keeper is the process `identity` on `host`, from now (replacing an ended one's).
  void SetKeeper(const std::string& job_id, int pid, const std::string& identity,
                 const std::string& host);
  // The keeper is alive now.
  void KeeperHeartbeat(const std::string& job_id);
  // The keeper ended, saying why.
  void EndKeeper(const std::string& job_id, const std::string& note);
  std::optional<KeeperRecord> GetKeeper(const std::string& job_id);

  // The job is being recovered: `now`'s phase, slice and what it waits for (replace what was
  // said before; the first `since` stays while the recovery lasts, `now.since_ns` is not read).
  // Cleared by EndRecovering.
  void SetRecovering(const std::string& job_id, const RecoveringRecord& now);
  void EndRecovering(const std::string& job_id);
  std::optional<RecoveringRecord> Recovering(const std::string& job_id);

  // podrun is about to delete a slice to create it again (recorded before the delete).
  void BeginRecreation(const std::string& job_id, const RecreationRecord& recreation);
  // The node was created again: the intent is fulfilled.
  void EndRecreation(const std::string& job_id, const RecreationRecord& recreation);
  std::vector<RecreationRecord> Recreations(const std::string& job_id);

 private:
  StoreDatabase& db_;
};

}  // namespace podrun
