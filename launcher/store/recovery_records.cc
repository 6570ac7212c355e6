// See recovery_records.h; the tables are in job_store_schema.cc (migrations 3 and 4).
#include "launcher/store/recovery_records.h"

#include <sqlite3.h>

#include "launcher/store/sqlite_statement.h"

namespace podrun {

int64_t RecoveryRecords::AddPreemption(const std::string& job_id, const PreemptionRecord& p) {
  Statement s = db_.Prepare(
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
  return db_.LastInsertRowid();
}

void RecoveryRecords::SetPreemptionBack(int64_t id, int64_t back_ns) {
  Statement s = db_.Prepare("UPDATE preemptions SET back_ns = ?2 WHERE rowid = ?1");
  s.Bind(1, id).Bind(2, back_ns).Run();
}

std::vector<PreemptionRecord> RecoveryRecords::Preemptions(const std::string& job_id) {
  Statement s = db_.Prepare(
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

void RecoveryRecords::SetKeeper(const std::string& job_id, int pid, const std::string& identity,
                                const std::string& host) {
  const int64_t now = NowUnixNs();
  Statement s = db_.Prepare(
      "INSERT OR REPLACE INTO keepers (job_id, pid, host, started_ns, heartbeat_ns, "
      "identity) VALUES (?1, ?2, ?3, ?4, ?4, ?5)");
  s.Bind(1, job_id).Bind(2, pid).Bind(3, host).Bind(4, now).Bind(5, identity).Run();
}

void RecoveryRecords::KeeperHeartbeat(const std::string& job_id) {
  Statement s = db_.Prepare("UPDATE keepers SET heartbeat_ns = ?2 WHERE job_id = ?1");
  s.Bind(1, job_id).Bind(2, NowUnixNs()).Run();
}

void RecoveryRecords::EndKeeper(const std::string& job_id, const std::string& note) {
  Statement s = db_.Prepare(
      "UPDATE keepers SET ended_ns = ?2, end_note = ?3 WHERE job_id = ?1 AND ended_ns IS "
      "NULL");
  s.Bind(1, job_id).Bind(2, NowUnixNs()).Bind(3, note).Run();
}

std::optional<KeeperRecord> RecoveryRecords::GetKeeper(const std::string& job_id) {
  Statement s = db_.Prepare(
      "SELECT pid, host, started_ns, heartbeat_ns, ended_ns, end_note, identity "
      "FROM keepers WHERE job_id = ?1");
  s.Bind(1, job_id);
  if (!s.Step()) return std::nullopt;
  KeeperRecord k;
  k.pid = static_cast<int>(s.Int(0));
  k.host = s.Text(1);
  k.started_ns = s.Int(2);
  k.heartbeat_ns = s.Int(3);
  k.ended_ns = s.OptionalInt(4);
  k.end_note = s.Text(5);
  k.identity = s.Text(6);
  return k;
}

const char* RecoveringPhaseName(RecoveringPhase phase) {
  switch (phase) {
    case RecoveringPhase::kAsking:
      return "asking";
    case RecoveringPhase::kWaiting:
      return "waiting";
    case RecoveringPhase::kRecreating:
      return "recreating";
    case RecoveringPhase::kApiOutage:
      return "api-outage";
    case RecoveringPhase::kRestarting:
      return "restarting";
  }
  return "waiting";
}

namespace {

RecoveringPhase RecoveringPhaseNamed(const std::string& name) {
  for (RecoveringPhase p :
       {RecoveringPhase::kAsking, RecoveringPhase::kWaiting, RecoveringPhase::kRecreating,
        RecoveringPhase::kApiOutage, RecoveringPhase::kRestarting}) {
    if (name == RecoveringPhaseName(p)) return p;
  }
  return RecoveringPhase::kWaiting;  // a row written before phases were kept
}

}  // namespace

void RecoveryRecords::SetRecovering(const std::string& job_id, const RecoveringRecord& now) {
  Statement s = db_.Prepare(
      "INSERT INTO recovering (job_id, what, since_ns, phase, slice) VALUES (?1, ?2, ?3, ?4, ?5) "
      "ON CONFLICT (job_id) DO UPDATE SET what = excluded.what, phase = excluded.phase, "
      "slice = excluded.slice");
  s.Bind(1, job_id)
      .Bind(2, now.what)
      .Bind(3, NowUnixNs())
      .Bind(4, std::string(RecoveringPhaseName(now.phase)))
      .Bind(5, now.slice)
      .Run();
}

void RecoveryRecords::EndRecovering(const std::string& job_id) {
  Statement s = db_.Prepare("DELETE FROM recovering WHERE job_id = ?1");
  s.Bind(1, job_id).Run();
}

std::optional<RecoveringRecord> RecoveryRecords::Recovering(const std::string& job_id) {
  Statement s =
      db_.Prepare("SELECT what, since_ns, phase, slice FROM recovering WHERE job_id = ?1");
  s.Bind(1, job_id);
  if (!s.Step()) return std::nullopt;
  return RecoveringRecord{RecoveringPhaseNamed(s.Text(2)), s.Text(3), s.Text(0), s.Int(1)};
}

void RecoveryRecords::BeginRecreation(const std::string& job_id, const RecreationRecord& r) {
  Statement s = db_.Prepare(
      "INSERT OR REPLACE INTO recreations (job_id, node, zone, project, began_ns, kind) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  s.Bind(1, job_id)
      .Bind(2, r.node)
      .Bind(3, r.zone)
      .Bind(4, r.project)
      .Bind(5, r.began_ns ? r.began_ns : NowUnixNs())
      .Bind(6, r.kind)
      .Run();
}

void RecoveryRecords::EndRecreation(const std::string& job_id, const RecreationRecord& r) {
  Statement s = db_.Prepare(
      "DELETE FROM recreations WHERE job_id = ?1 AND node = ?2 AND zone = ?3 AND "
      "project = ?4");
  s.Bind(1, job_id).Bind(2, r.node).Bind(3, r.zone).Bind(4, r.project).Run();
}

std::vector<RecreationRecord> RecoveryRecords::Recreations(const std::string& job_id) {
  Statement s = db_.Prepare(
      "SELECT node, zone, project, began_ns, kind FROM recreations WHERE job_id = ?1 "
      "ORDER BY began_ns");
  s.Bind(1, job_id);
  std::vector<RecreationRecord> out;
  while (s.Step()) out.push_back({s.Text(4), s.Text(0), s.Text(1), s.Text(2), s.Int(3)});
  return out;
}

}  // namespace podrun
