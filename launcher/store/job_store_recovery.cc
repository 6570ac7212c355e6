// The job store's record of recovery: why attempts ran again, preemptions, keepers (see
// job_store.h; the tables are in job_store_schema.cc, migration 3).
#include <sqlite3.h>

#include "launcher/base/error.h"
#include "launcher/store/job_store.h"
#include "launcher/store/sqlite_statement.h"

namespace podrun {

void JobStore::SetAttemptResumedFrom(const std::string& job_id, int attempt,
                                     const std::string& reason) {
  Statement s(db_.get(), path_,
              "UPDATE attempts SET resumed_from = ?3 WHERE job_id = ?1 AND number = ?2");
  s.Bind(1, job_id).Bind(2, attempt).Bind(3, reason).Run();
}

void JobStore::SetAttemptCause(const std::string& job_id, int attempt, const std::string& cause) {
  Statement s(db_.get(), path_, "UPDATE attempts SET cause = ?3 WHERE job_id = ?1 AND number = ?2");
  s.Bind(1, job_id).Bind(2, attempt).Bind(3, cause).Run();
}

int64_t JobStore::AddPreemption(const std::string& job_id, const PreemptionRecord& p) {
  Statement s(db_.get(), path_,
              "INSERT INTO preemptions (job_id, attempt, node, state, seen_ns, back_ns, "
              "recreated) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  s.Bind(1, job_id)
      .Bind(2, p.attempt)
      .Bind(3, p.node)
      .Bind(4, p.state)
      .Bind(5, p.seen_ns ? p.seen_ns : NowUnixNs())
      .Bind(6, p.back_ns)
      .Bind(7, p.recreated ? 1 : 0)
      .Run();
  return sqlite3_last_insert_rowid(db_.get());
}

void JobStore::SetPreemptionBack(int64_t id, int64_t back_ns) {
  Statement s(db_.get(), path_, "UPDATE preemptions SET back_ns = ?2 WHERE rowid = ?1");
  s.Bind(1, id).Bind(2, back_ns).Run();
}

std::vector<PreemptionRecord> JobStore::Preemptions(const std::string& job_id) {
  Statement s(db_.get(), path_,
              "SELECT rowid, attempt, node, state, seen_ns, back_ns, recreated FROM preemptions "
              "WHERE job_id = ?1 ORDER BY seen_ns, rowid");
  s.Bind(1, job_id);
  std::vector<PreemptionRecord> out;
  while (s.Step()) {
    PreemptionRecord p;
    p.id = s.Int(0);
    p.attempt = static_cast<int>(s.Int(1));
    p.node = s.Text(2);
    p.state = s.Text(3);
    p.seen_ns = s.Int(4);
    p.back_ns = s.OptionalInt(5);
    p.recreated = s.Int(6) != 0;
    out.push_back(std::move(p));
  }
  return out;
}

void JobStore::SetKeeper(const std::string& job_id, int pid, const std::string& host) {
  const int64_t now = NowUnixNs();
  Statement s(db_.get(), path_,
              "INSERT OR REPLACE INTO keepers (job_id, pid, host, started_ns, heartbeat_ns) "
              "VALUES (?1, ?2, ?3, ?4, ?4)");
  s.Bind(1, job_id).Bind(2, pid).Bind(3, host).Bind(4, now).Run();
}

void JobStore::KeeperHeartbeat(const std::string& job_id) {
  Statement s(db_.get(), path_, "UPDATE keepers SET heartbeat_ns = ?2 WHERE job_id = ?1");
  s.Bind(1, job_id).Bind(2, NowUnixNs()).Run();
}

void JobStore::EndKeeper(const std::string& job_id, const std::string& note) {
  Statement s(db_.get(), path_,
              "UPDATE keepers SET ended_ns = ?2, end_note = ?3 WHERE job_id = ?1 AND ended_ns IS "
              "NULL");
  s.Bind(1, job_id).Bind(2, NowUnixNs()).Bind(3, note).Run();
}

std::optional<KeeperRecord> JobStore::GetKeeper(const std::string& job_id) {
  Statement s(db_.get(), path_,
              "SELECT pid, host, started_ns, heartbeat_ns, ended_ns, end_note FROM keepers "
              "WHERE job_id = ?1");
  s.Bind(1, job_id);
  if (!s.Step()) return std::nullopt;
  KeeperRecord k;
  k.pid = static_cast<int>(s.Int(0));
  k.host = s.Text(1);
  k.started_ns = s.Int(2);
  k.heartbeat_ns = s.Int(3);
  k.ended_ns = s.OptionalInt(4);
  k.end_note = s.Text(5);
  return k;
}

}  // namespace podrun
