// The job store's queries, behind status, logs, ls and rerun (the schema is in
// job_store_schema.cc, the SQLite wrappers in sqlite_statement.h).
#include "launcher/store/job_store.h"

#include <sqlite3.h>

#include <array>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <utility>

#include "launcher/base/error.h"
#include "launcher/store/job_rows.h"
#include "launcher/store/job_store_schema.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/sqlite_statement.h"
#include "launcher/store/store_database.h"

namespace podrun {
namespace {

using nlohmann::json;

std::string NewJobId(int64_t now_ns) {
  std::time_t seconds = static_cast<std::time_t>(now_ns / 1000000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
  static thread_local std::mt19937 random{std::random_device{}()};
  char suffix[8];
  std::snprintf(suffix, sizeof suffix, "%04x", static_cast<unsigned>(random() & 0xffff));
  return std::string(stamp) + "-" + suffix;
}

std::string JoinIds(const std::vector<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id;
  return out;
}

}  // namespace

int64_t NowUnixNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

JobStore::JobStore(const std::filesystem::path& db_path)
    : db_(std::make_unique<StoreDatabase>(db_path)) {
  Migrate();
}

JobStore JobStore::OpenDefault(const EnvLookup& lookup) {
  return JobStore(PodrunHome(lookup) / "podrun.db");
}

JobStore::JobStore(JobStore&&) noexcept = default;
JobStore& JobStore::operator=(JobStore&&) noexcept = default;
JobStore::~JobStore() = default;

const std::filesystem::path& JobStore::path() const { return db_->path(); }

void JobStore::Migrate() {
  Transaction tx = db_->Begin();
  Statement get = db_->Prepare("PRAGMA user_version");
  int version = get.Step() ? static_cast<int>(get.Int(0)) : 0;
  if (version > kJobStoreSchemaVersion) {
    throw Error(ExitCode::kFailed, db_->path().string() + ": made by a newer podrun (schema " +
                                       std::to_string(version) + ", this podrun knows " +
                                       std::to_string(kJobStoreSchemaVersion) + ")");
  }
  if (version == kJobStoreSchemaVersion) return;  // the transaction rolls back: nothing to do
  for (int v = version; v < kJobStoreSchemaVersion; ++v) db_->Exec(JobStoreMigration(v));
  db_->Exec(("PRAGMA user_version=" + std::to_string(kJobStoreSchemaVersion)).c_str());
  tx.Commit();
}

JobRecord JobStore::CreateJob(JobRecord job) {
  for (const std::string& name : job.secret_names) {
    if (job.env_overrides.count(name)) {
      throw UsageError("-e " + name + ": " + name + " is a secret; its value is never stored");
    }
  }
  job.created_ns = NowUnixNs();
  for (int tries = 0;; ++tries) {
    job.id = NewJobId(job.created_ns);
    Statement s = db_->Prepare(
        "INSERT OR IGNORE INTO jobs (id, name, pod, spec_text, spec_path, hosts_json, "
        "created_ns, env_overrides_json, secret_names_json, options_json) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    s.Bind(1, job.id)
        .Bind(2, job.name)
        .Bind(3, job.pod)
        .Bind(4, job.spec_text)
        .Bind(5, job.spec_path)
        .Bind(6, HostsToJson(job.hosts).dump())
        .Bind(7, job.created_ns)
        .Bind(8, json(job.env_overrides).dump())
        .Bind(9, json(job.secret_names).dump())
        .Bind(10, job.options_json);
    s.Run();
    if (db_->Changes() == 1) return job;
    if (tries == 100) db_->Fail("cannot find a free job id");
  }
}

void JobStore::SetJobHosts(const std::string& job_id, const std::vector<JobHost>& hosts) {
  Statement s = db_->Prepare("UPDATE jobs SET hosts_json = ?2 WHERE id = ?1");
  s.Bind(1, job_id).Bind(2, HostsToJson(hosts).dump()).Run();
  if (db_->Changes() == 0) throw UsageError("no job '" + job_id + "'");
}

void JobStore::SetJobOptions(const std::string& job_id, const std::string& options_json) {
  Statement s = db_->Prepare("UPDATE jobs SET options_json = ?2 WHERE id = ?1");
  s.Bind(1, job_id).Bind(2, options_json).Run();
  if (db_->Changes() == 0) throw UsageError("no job '" + job_id + "'");
}

void JobStore::SetSpecPath(const std::string& job_id, const std::string& spec_path) {
  Statement s = db_->Prepare("UPDATE jobs SET spec_path = ?2 WHERE id = ?1");
  s.Bind(1, job_id).Bind(2, spec_path).Run();
  if (db_->Changes() == 0) throw UsageError("no job '" + job_id + "'");
}

int JobStore::AddAttempt(const std::string& job_id, const std::vector<int>& workers,
                         AttemptReason reason, int64_t started_ns) {
  Transaction tx = db_->Begin();
  JobRecord job = GetJob(job_id);
  std::map<int, std::string> host_of;
  for (const JobHost& h : job.hosts) host_of[h.index] = h.host;
  std::set<int> seen;
  for (int index : workers) {
    if (!seen.insert(index).second) {
      throw UsageError("job " + job_id + ": worker " + std::to_string(index) + " given twice");
    }
    if (!job.hosts.empty() && !host_of.count(index)) {
      throw UsageError("job " + job_id + ": no worker " + std::to_string(index) + " in its pod (" +
                       std::to_string(job.hosts.size()) + " workers)");
    }
  }
  Statement next =
      db_->Prepare("SELECT COALESCE(MAX(number), 0) + 1 FROM attempts WHERE job_id = ?1");
  next.Bind(1, job_id).Step();
  int number = static_cast<int>(next.Int(0));
  Statement previous =
      db_->Prepare("SELECT COALESCE(ended_by, '') FROM attempts WHERE job_id = ?1 AND number = ?2");
  previous.Bind(1, job_id).Bind(2, number - 1);
  const AttemptEnd previous_end =
      previous.Step() ? ParseAttemptEnd(previous.Text(0)) : AttemptEnd::kNone;
  const std::string resumed_from = ResumedFrom(reason, previous_end);
  Statement insert = db_->Prepare(
      "INSERT INTO attempts (job_id, number, started_ns, state, workers_json, "
      "reason, resumed_from) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULLIF(?7, ''))");
  insert.Bind(1, job_id)
      .Bind(2, number)
      .Bind(3, started_ns)
      .Bind(4, std::string(AttemptStateName(AttemptState::kStarting)))
      .Bind(5, json(workers).dump())
      .Bind(6, std::string(AttemptReasonName(reason)))
      .Bind(7, resumed_from)
      .Run();
  Statement worker = db_->Prepare(
      "INSERT INTO workers (job_id, attempt, idx, host, state) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (int index : workers) {
    worker.Reset()
        .Bind(1, job_id)
        .Bind(2, number)
        .Bind(3, index)
        .Bind(4, host_of[index])
        .Bind(5, std::string(WorkerStateName(WorkerState::kPending)))
        .Run();
  }
  tx.Commit();
  return number;
}

void JobStore::SetAttemptState(const std::string& job_id, int attempt, AttemptState state,
                               std::optional<int> exit_code, std::optional<int64_t> ended_ns) {
  Statement s = db_->Prepare(
      "UPDATE attempts SET state = ?3, exit_code = COALESCE(?4, exit_code), "
      "ended_ns = COALESCE(?5, ended_ns) WHERE job_id = ?1 AND number = ?2");
  s.Bind(1, job_id)
      .Bind(2, attempt)
      .Bind(3, std::string(AttemptStateName(state)))
      .Bind(4, exit_code)
      .Bind(5, ended_ns)
      .Run();
  if (db_->Changes() == 0) {
    throw UsageError("job " + job_id + " has no attempt " + std::to_string(attempt));
  }
}

void JobStore::SetAttemptEnd(const std::string& job_id, int attempt, AttemptEnd end,
                             const std::optional<std::string>& cause) {
  Statement s = db_->Prepare(
      "UPDATE attempts SET ended_by = NULLIF(?3, ''), cause = COALESCE(?4, cause) "
      "WHERE job_id = ?1 AND number = ?2");
  s.Bind(1, job_id).Bind(2, attempt).Bind(3, std::string(AttemptEndName(end))).Bind(4, cause).Run();
}

void JobStore::UpdateWorker(const std::string& job_id, int attempt, int index,
                            const WorkerUpdate& u) {
  Statement s = db_->Prepare(
      "UPDATE workers SET state = COALESCE(?4, state), "
      "exit_code = COALESCE(?5, exit_code), signal = COALESCE(?6, signal), "
      "start_ns = COALESCE(?7, start_ns), end_ns = COALESCE(?8, end_ns), "
      "error = COALESCE(?9, error), last_seq = COALESCE(?10, last_seq), "
      "stop_pending_grace = CASE WHEN ?11 IS NULL THEN stop_pending_grace "
      "  WHEN ?11 < 0 THEN NULL ELSE ?11 END "
      "WHERE job_id = ?1 AND attempt = ?2 AND idx = ?3");
  std::optional<std::string> state;
  if (u.state) state = WorkerStateName(*u.state);
  std::optional<int64_t> last_seq;
  if (u.last_seq) last_seq = static_cast<int64_t>(*u.last_seq);
  s.Bind(1, job_id)
      .Bind(2, attempt)
      .Bind(3, index)
      .Bind(4, state)
      .Bind(5, u.exit_code)
      .Bind(6, u.signal)
      .Bind(7, u.start_ns)
      .Bind(8, u.end_ns)
      .Bind(9, u.error)
      .Bind(10, last_seq)
      .Bind(11, u.stop_pending_grace)
      .Run();
  if (db_->Changes() == 0) {
    throw UsageError("job " + job_id + " attempt " + std::to_string(attempt) + " has no worker " +
                     std::to_string(index));
  }
}

JobRecord JobStore::GetJob(const std::string& id) {
  Statement s =
      db_->Prepare((std::string("SELECT ") + kJobColumns + " FROM jobs WHERE id = ?1").c_str());
  s.Bind(1, id);
  if (!s.Step()) throw UsageError("no job '" + id + "'");
  return ReadJob(s);
}

JobRecord JobStore::ResolveJobOrLatest(const std::string& ref) {
  if (!ref.empty()) return ResolveJob(ref);
  std::optional<JobRecord> latest = LatestJob();
  if (!latest) throw UsageError("no jobs yet (start one with 'podrun launch SPEC.yaml')");
  return *latest;
}

JobRecord JobStore::ResolveJob(const std::string& ref) {
  if (ref.empty()) throw UsageError("no job given");
  {
    Statement s = db_->Prepare((std::string("SELECT ") + kJobColumns +
                                " FROM jobs WHERE id = ?1 OR name = ?1 "
                                "ORDER BY id = ?1 DESC, created_ns DESC, id DESC LIMIT 1")
                                   .c_str());
    s.Bind(1, ref);
    if (s.Step()) return ReadJob(s);
  }
  std::vector<std::string> matches;
  {
    Statement s = db_->Prepare(
        "SELECT id FROM jobs WHERE substr(id, 1, length(?1)) = ?1 "
        "ORDER BY created_ns DESC, id DESC");
    s.Bind(1, ref);
    while (s.Step()) matches.push_back(s.Text(0));
  }
  if (matches.size() == 1) return GetJob(matches[0]);
  if (matches.size() > 1) {
    throw UsageError("job '" + ref + "' is ambiguous: it could be " + JoinIds(matches));
  }
  std::vector<std::string> recent;
  for (const JobSummary& job : ListJobs(5)) recent.push_back(job.id + " (" + job.name + ")");
  throw UsageError(
      "no job '" + ref + "'" +
      (recent.empty() ? std::string(" (no jobs yet)") : "; latest jobs: " + JoinIds(recent)));
}

std::optional<JobRecord> JobStore::LatestJob() {
  Statement s = db_->Prepare((std::string("SELECT ") + kJobColumns +
                              " FROM jobs ORDER BY created_ns DESC, id DESC LIMIT 1")
                                 .c_str());
  if (!s.Step()) return std::nullopt;
  return ReadJob(s);
}

std::vector<AttemptRecord> JobStore::Attempts(const std::string& job_id) {
  Statement s = db_->Prepare((std::string("SELECT ") + kAttemptColumns +
                              " FROM attempts WHERE job_id = ?1 ORDER BY number")
                                 .c_str());
  s.Bind(1, job_id);
  std::vector<AttemptRecord> out;
  while (s.Step()) out.push_back(ReadAttempt(s, db_->path()));
  return out;
}

AttemptRecord JobStore::GetAttempt(const std::string& job_id, int attempt) {
  Statement s = db_->Prepare((std::string("SELECT ") + kAttemptColumns +
                              " FROM attempts WHERE job_id = ?1 AND number = ?2")
                                 .c_str());
  s.Bind(1, job_id).Bind(2, attempt);
  if (!s.Step()) {
    throw UsageError("job " + job_id + " has no attempt " + std::to_string(attempt));
  }
  return ReadAttempt(s, db_->path());
}

std::optional<AttemptRecord> JobStore::LatestAttempt(const std::string& job_id) {
  Statement s = db_->Prepare((std::string("SELECT ") + kAttemptColumns +
                              " FROM attempts WHERE job_id = ?1 ORDER BY number DESC LIMIT 1")
                                 .c_str());
  s.Bind(1, job_id);
  if (!s.Step()) return std::nullopt;
  return ReadAttempt(s, db_->path());
}

std::vector<WorkerRecord> JobStore::Workers(const std::string& job_id, int attempt) {
  Statement s = db_->Prepare(
      "SELECT idx, host, state, exit_code, signal, start_ns, end_ns, error, last_seq, "
      "stop_pending_grace FROM workers WHERE job_id = ?1 AND attempt = ?2 ORDER BY idx");
  s.Bind(1, job_id).Bind(2, attempt);
  std::vector<WorkerRecord> out;
  while (s.Step()) {
    WorkerRecord w;
    w.index = static_cast<int>(s.Int(0));
    w.host = s.Text(1);
    std::string state = s.Text(2);
    std::optional<WorkerState> parsed = ParseWorkerState(state);
    if (!parsed) {
      throw Error(ExitCode::kFailed, db_->path().string() + ": bad worker state '" + state + "'");
    }
    w.state = *parsed;
    w.exit_code = s.OptionalInt32(3);
    w.signal = s.OptionalInt32(4);
    w.start_ns = s.OptionalInt(5);
    w.end_ns = s.OptionalInt(6);
    w.error = s.Text(7);
    w.last_seq = static_cast<uint64_t>(s.Int(8));
    w.stop_pending_grace = s.OptionalInt32(9);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<JobSummary> JobStore::ListJobs(int limit) {
  Statement s = db_->Prepare(
      "SELECT j.id, j.name, j.pod, j.created_ns, "
      "  (SELECT COUNT(*) FROM attempts c WHERE c.job_id = j.id), "
      "  a.state, a.started_ns, a.ended_ns, (SELECT MIN(w.step) FROM workers w "
      "    WHERE w.job_id = j.id AND w.attempt = a.number) "
      "FROM jobs j LEFT JOIN attempts a ON a.job_id = j.id AND a.number = "
      "  (SELECT MAX(number) FROM attempts m WHERE m.job_id = j.id) "
      "ORDER BY j.created_ns DESC, j.id DESC LIMIT ?1");
  s.Bind(1, limit > 0 ? limit : -1);
  std::vector<JobSummary> out;
  while (s.Step()) {
    JobSummary job;
    job.id = s.Text(0);
    job.name = s.Text(1);
    job.pod = s.Text(2);
    job.created_ns = s.Int(3);
    job.attempts = static_cast<int>(s.Int(4));
    if (s.OptionalInt(6)) {
      job.state = ParseAttemptState(s.Text(5));
      job.started_ns = s.OptionalInt(6);
      job.ended_ns = s.OptionalInt(7);
      job.step = s.OptionalInt(8);
    }
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace podrun
