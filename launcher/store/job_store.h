// The launcher's job store (docs/design.md decision 8): jobs, their attempts and each worker's
// outcome, in SQLite at $PODRUN_HOME/podrun.db, so that status, logs, ls and rerun work from
// any terminal. Never holds a secret's value: only secret names.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/spec/job_env.h"
#include "launcher/store/attempt_reason.h"
#include "launcher/store/worker_state.h"

namespace podrun {

class StoreDatabase;

// One worker of the job's pod, as resolved at launch.
struct JobHost {
  int index = 0;
  std::string user;
  std::string host;     // what the launcher connects to
  int port = 0;         // 0: not applicable (--local)
  std::string address;  // as the workers reach each other (PODRUN_WORKER_HOSTS)

  bool operator==(const JobHost&) const = default;
};

struct JobRecord {
  std::string id;  // YYYYMMDD-HHMMSS-xxxx (UTC, 4 random hex digits); assigned by CreateJob
  std::string name;
  std::string pod;  // e.g. "hosts:4", "local:4", "tpu:node-1"
  std::string spec_text;
  std::string spec_path;
  std::vector<JobHost> hosts;  // the whole pod in rank order
  int64_t created_ns = 0;      // wall clock, ns since the epoch; assigned by CreateJob
  std::map<std::string, std::string> env_overrides;  // `-e` values (never secrets)
  std::vector<std::string> secret_names;             // names only, never values
  std::string options_json = "{}";  // launcher options a rerun needs; opaque to the store
};

struct AttemptRecord {
  std::string job_id;
  int number = 0;  // 1, 2, ...
  int64_t started_ns = 0;
  std::optional<int64_t> ended_ns;
  AttemptState state = AttemptState::kStarting;
  std::vector<int> workers;  // selected worker indexes
  std::optional<int> exit_code;
  AttemptReason reason = AttemptReason::kLaunch;  // why it ran (written once, by AddAttempt)
  std::string resumed_from;  // its PODRUN_RESUMED_FROM: failure, hang or preemption; "" if none
  AttemptEnd ended_by = AttemptEnd::kNone;  // what ended it, when it failed
  std::string cause;  // the root cause of its end, for people, as reported; "" if none
};

struct WorkerRecord {
  int index = 0;
  std::string host;
  WorkerState state = WorkerState::kPending;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<int64_t> start_ns;  // when its run process started
  std::optional<int64_t> end_ns;
  std::string error;      // why it failed, was lost or could not start; "" if none
  uint64_t last_seq = 0;  // last log record the launcher has stored (0: none)
  // Set when podrun stopped the gang but could not reach this worker: its process must still
  // be stopped, with this grace period (seconds), by the next command that reaches it.
  std::optional<int> stop_pending_grace;
};

// The fields of a worker to change; unset fields keep their value. Meant for designated
// initializers: UpdateWorker(id, 1, 0, {.state = WorkerState::kRunning, .start_ns = t}).
struct WorkerUpdate {
  std::optional<WorkerState> state = {};
  std::optional<int> exit_code = {};
  std::optional<int> signal = {};
  std::optional<int64_t> start_ns = {};
  std::optional<int64_t> end_ns = {};
  std::optional<std::string> error = {};
  std::optional<uint64_t> last_seq = {};
  std::optional<int> stop_pending_grace = {};  // >= 0: a stop is pending; -1: none any more
};

// One line of `podrun ls`: the job and its latest attempt (the attempt fields are empty when it
// has none). Duration = ended_ns - started_ns (still running: no ended_ns). `step`: the lowest
// step among the attempt's workers that have one (the step every worker has reached).
struct JobSummary {
  std::string id;
  std::string name;
  std::string pod;
  int64_t created_ns = 0;
  int attempts = 0;
  std::optional<AttemptState> state;
  std::optional<int64_t> started_ns;
  std::optional<int64_t> ended_ns;
  std::optional<int64_t> step;
};

// Wall clock, ns since the epoch.
int64_t NowUnixNs();

// The SQLite database. Several JobStore objects, in one process or several, may use the same
// file at once (WAL, busy timeout). One object is not thread-safe: use it from one thread at a
// time. Every method throws podrun::Error on SQLite errors, with the database path in the
// message (ExitCode::kFailed), and on unknown jobs or attempts (ExitCode::kUsage).
class JobStore {
 public:
  // Opens (creating if missing) the database at `db_path` and migrates its schema. Throws
  // podrun::Error when it cannot, or when the file was made by a newer podrun.
  explicit JobStore(const std::filesystem::path& db_path);
  // The store at PodrunHome()/podrun.db.
  static JobStore OpenDefault(const EnvLookup& lookup = LauncherEnv);

  JobStore(JobStore&&) noexcept;
  JobStore& operator=(JobStore&&) noexcept;
  ~JobStore();

  const std::filesystem::path& path() const;

  // Stores a new job; assigns and returns its id and created_ns in the returned record.
  // Throws podrun::Error (kUsage) when an env override is also a secret's name.
  JobRecord CreateJob(JobRecord job);
  // Replaces the job's resolved hosts (e.g. once discovery answered).
  void SetJobHosts(const std::string& job_id, const std::vector<JobHost>& hosts);
  // Replaces the job's recorded spec path (an old store's relative one, resolved: RecordedSpec).
  void SetSpecPath(const std::string& job_id, const std::string& spec_path);
  // The job's pod settings (PodOptionsJson): its slices moved to another zone.
  void SetJobOptions(const std::string& job_id, const std::string& options_json);

  // Adds the next attempt of the job (number 1, 2, ...) in state kStarting, with one worker
  // row (kPending, host from the job's hosts) per selected index, recording why it runs and
  // so its PODRUN_RESUMED_FROM (from `reason` and what ended the attempt before); returns its
  // number.
  int AddAttempt(const std::string& job_id, const std::vector<int>& workers, AttemptReason reason,
                 int64_t started_ns = NowUnixNs());
  // Records what ended an attempt (and, when given, its root cause as the report said it).
  void SetAttemptEnd(const std::string& job_id, int attempt, AttemptEnd end,
                     const std::optional<std::string>& cause = std::nullopt);
  // Sets an attempt's state, and its exit code and end time when given.
  void SetAttemptState(const std::string& job_id, int attempt, AttemptState state,
                       std::optional<int> exit_code = std::nullopt,
                       std::optional<int64_t> ended_ns = std::nullopt);
  // Applies `update` to one worker of an attempt.
  void UpdateWorker(const std::string& job_id, int attempt, int index, const WorkerUpdate& update);

  // The job with exactly this id; throws podrun::Error (kUsage) when there is none.
  JobRecord GetJob(const std::string& id);
  // JOB as the user wrote it: an id, else a name (its latest job), else a unique id prefix.
  // Throws podrun::Error (kUsage) listing the candidates when ambiguous or unknown.
  JobRecord ResolveJob(const std::string& ref);
  // The most recently created job, if any.
  std::optional<JobRecord> LatestJob();
  // ResolveJob(ref), or the latest job when `ref` is empty (the commands' default);
  // Error(kUsage) when there is none.
  JobRecord ResolveJobOrLatest(const std::string& ref);

  // The job's attempts, oldest first.
  std::vector<AttemptRecord> Attempts(const std::string& job_id);
  // One attempt; throws podrun::Error (kUsage) when there is none.
  AttemptRecord GetAttempt(const std::string& job_id, int attempt);
  std::optional<AttemptRecord> LatestAttempt(const std::string& job_id);
  // The workers of an attempt, by index.
  std::vector<WorkerRecord> Workers(const std::string& job_id, int attempt);

  // Every job, newest first; at most `limit` when limit > 0.
  std::vector<JobSummary> ListJobs(int limit = 0);

  // The connection, for the store's other records (RecoveryRecords, RunRecords): valid while
  // this store lives, moves included.
  StoreDatabase& database() { return *db_; }

 private:
  void Migrate();

  std::unique_ptr<StoreDatabase> db_;
};

}  // namespace podrun
