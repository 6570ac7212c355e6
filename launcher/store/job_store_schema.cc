// See job_store_schema.h.
#include "launcher/store/job_store_schema.h"

#include <iterator>

namespace podrun {
namespace {

// Schema migrations: kMigrations[i] moves a database from user_version i to i + 1. Append new
// steps; never edit a released one.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  pod TEXT NOT NULL,
  spec_text TEXT NOT NULL,
  spec_path TEXT NOT NULL,
  hosts_json TEXT NOT NULL,          -- [{index, user, host, port, address}, ...]
  created_ns INTEGER NOT NULL,
  env_overrides_json TEXT NOT NULL,  -- {"KEY": "value"} from -e; never a secret
  secret_names_json TEXT NOT NULL,   -- ["NAME", ...]; values are never stored
  options_json TEXT NOT NULL
);
CREATE INDEX jobs_by_name ON jobs(name, created_ns);
CREATE INDEX jobs_by_created ON jobs(created_ns);
CREATE TABLE attempts (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  number INTEGER NOT NULL,
  started_ns INTEGER NOT NULL,
  ended_ns INTEGER,
  state TEXT NOT NULL,
  workers_json TEXT NOT NULL,        -- selected worker indexes
  exit_code INTEGER,
  PRIMARY KEY (job_id, number)
);
CREATE TABLE workers (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  host TEXT NOT NULL,
  state TEXT NOT NULL,
  exit_code INTEGER,
  signal INTEGER,
  start_ns INTEGER,
  end_ns INTEGER,
  error TEXT NOT NULL DEFAULT '',
  last_seq INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, attempt, idx),
  FOREIGN KEY (job_id, attempt) REFERENCES attempts(job_id, number) ON DELETE CASCADE
);
)sql",
    // 2: a stop that could not be delivered (the worker was cut off while its gang was being
    // stopped) waits here for the next podrun command or attempt that reaches the worker.
    R"sql(
ALTER TABLE workers ADD COLUMN stop_pending_grace INTEGER;  -- seconds; NULL: no stop pending
)sql",
    // 3: recovery (docs/reference.md, "Provisioning and recovery"): why an attempt ran again and
    // what ended it, each preemption of the job's TPU node, and the job's keeper.
    R"sql(
ALTER TABLE attempts ADD COLUMN resumed_from TEXT;  -- failure | hang | preemption; NULL: first
ALTER TABLE attempts ADD COLUMN cause TEXT;         -- the root cause of its end, as reported
CREATE TABLE preemptions (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,          -- the attempt it ended
  node TEXT NOT NULL,
  state TEXT NOT NULL,               -- PREEMPTED, TERMINATED, SUSPENDED, ...
  seen_ns INTEGER NOT NULL,
  back_ns INTEGER,                   -- the node READY again; NULL: not (yet)
  recreated INTEGER NOT NULL         -- 1: podrun deleted and created it
);
CREATE TABLE keepers (
  job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  pid INTEGER NOT NULL,
  host TEXT NOT NULL,
  started_ns INTEGER NOT NULL,
  heartbeat_ns INTEGER NOT NULL,
  ended_ns INTEGER,
  end_note TEXT NOT NULL DEFAULT ''
);
)sql",
    // 4: typed facts (docs/design.md decisions 17, 18): why each attempt ran and what ended it,
    // the keeper's process identity (pid, start time, boot id), what a job being recovered waits
    // for, and a recreation podrun has begun (recorded before the delete, so that a keeper killed
    // between the delete and the create finishes it).
    R"sql(
ALTER TABLE attempts ADD COLUMN reason TEXT;    -- launch | rerun | restart-after-failure | ...
ALTER TABLE attempts ADD COLUMN ended_by TEXT;  -- failure | hang | preemption; NULL: none
UPDATE attempts SET reason = CASE
    WHEN resumed_from IS NULL THEN (CASE WHEN number = 1 THEN 'launch' ELSE 'rerun' END)
    WHEN resumed_from = 'preemption' THEN 'recovery-after-preemption'
    WHEN resumed_from = 'hang' THEN 'restart-after-hang'
    ELSE 'restart-after-failure' END;
ALTER TABLE keepers ADD COLUMN identity TEXT NOT NULL DEFAULT '';  -- "pid start_ticks boot_id"
CREATE TABLE recovering (             -- a job between attempts, being healed: what it waits for
  job_id TEXT PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  what TEXT NOT NULL,
  since_ns INTEGER NOT NULL
);
CREATE TABLE recreations (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  node TEXT NOT NULL,
  zone TEXT NOT NULL,
  project TEXT NOT NULL,
  began_ns INTEGER NOT NULL,
  PRIMARY KEY (job_id, node, zone, project)
);
)sql",
    // 5: what reports need, recorded as it happens (docs/design.md decision 19): each worker's
    // phases per attempt, its step samples (thinned to a fixed count per worker and attempt), its
    // latest step, rate and straggler note, and the hang report made when the stall watch fired.
    R"sql(
CREATE TABLE phases (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,              -- the worker
  phase TEXT NOT NULL,               -- agents | sync | mounts | setup | start
  start_ns INTEGER NOT NULL,
  end_ns INTEGER,                    -- NULL: not ended (yet)
  failed INTEGER NOT NULL DEFAULT 0, -- 1: the worker failed in it
  PRIMARY KEY (job_id, attempt, idx, phase)
);
CREATE TABLE step_samples (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,          -- the worker's clock when it printed the step
  step INTEGER NOT NULL,
  PRIMARY KEY (job_id, attempt, idx, time_ns)
) WITHOUT ROWID;
ALTER TABLE workers ADD COLUMN step INTEGER;           -- its latest step; NULL: none seen
ALTER TABLE workers ADD COLUMN step_ns INTEGER;        -- when it printed it
ALTER TABLE workers ADD COLUMN first_step_ns INTEGER;  -- when it printed its first
ALTER TABLE workers ADD COLUMN steps_per_s REAL;       -- its recent rate; NULL: unknown
ALTER TABLE workers ADD COLUMN straggler TEXT NOT NULL DEFAULT '';  -- "0.41 steps/s vs median 0.93"
CREATE TABLE hang_reports (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  made_ns INTEGER NOT NULL,
  text TEXT NOT NULL,                -- as printed
  json TEXT NOT NULL,                -- as `podrun why --json` gives it
  PRIMARY KEY (job_id, attempt)
);
)sql",
    // 6: the straggler flag as figures, not text: its rate and the gang's median when flagged
    // (both NULL: not a straggler). The text column of 5 is no longer written.
    R"sql(
ALTER TABLE workers ADD COLUMN straggler_steps_per_s REAL;
ALTER TABLE workers ADD COLUMN straggler_median REAL;
)sql",
    // 7: facts as fields (docs/decisions.md, "One provisioning engine"): the kind of a slice being recreated,
    // and a recovery's phase and slice beside its text.
    R"sql(
ALTER TABLE recreations ADD COLUMN kind TEXT NOT NULL DEFAULT 'tpu';  -- tpu | mig
ALTER TABLE recovering ADD COLUMN phase TEXT NOT NULL DEFAULT 'waiting';  -- RecoveringPhaseName
ALTER TABLE recovering ADD COLUMN slice TEXT NOT NULL DEFAULT '';  -- "tpu node-1"; '': the pod
)sql",
};

}  // namespace

const int kJobStoreSchemaVersion = static_cast<int>(std::size(kMigrations));

const char* JobStoreMigration(int version) { return kMigrations[version]; }

}  // namespace podrun
