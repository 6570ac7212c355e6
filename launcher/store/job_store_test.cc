// Tests of the job store on a real SQLite file: round trips, JOB resolution, two stores on one
// file, and that no secret's value ever reaches the database.
#include "launcher/store/job_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/spec/job_env.h"
#include "launcher/store/job_store_schema.h"
#include "launcher/store/recovery_records.h"
#include "launcher/store/run_records.h"

namespace podrun {
namespace {

class JobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("podrun-store-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = dir_ / "podrun.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static JobRecord SampleJob(const std::string& name) {
    JobRecord job;
    job.name = name;
    job.pod = "hosts:2";
    job.spec_text = "run: python3 train.py\n";
    job.spec_path = "/home/u/" + name + ".yaml";
    job.hosts = {{0, "matt", "10.0.0.2", 22, "10.0.0.2"}, {1, "matt", "w1", 2222, "10.0.0.3"}};
    job.env_overrides = {{"EPOCHS", "3"}};
    job.secret_names = {"WANDB_API_KEY"};
    job.options_json = R"({"identity":"/k"})";
    return job;
  }

  // The message of the podrun::Error `f` throws.
  template <typename F>
  static std::string ErrorOf(F f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error";
    return "";
  }

  // Every byte of the database's files (main file, WAL), for searching.
  std::string AllBytes() {
    std::string all;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream s;
      s << in.rdbuf();
      all += s.str();
    }
    return all;
  }

  std::filesystem::path dir_;
  std::filesystem::path db_;
};

TEST_F(JobStoreTest, JobRoundTrip) {
  JobStore store(db_);
  JobRecord created = store.CreateJob(SampleJob("bert"));
  EXPECT_TRUE(std::regex_match(created.id, std::regex(R"(\d{8}-\d{6}-[0-9a-f]{4})"))) << created.id;
  EXPECT_GT(created.created_ns, 0);

  JobRecord got = store.GetJob(created.id);
  EXPECT_EQ(created.id, got.id);
  EXPECT_EQ("bert", got.name);
  EXPECT_EQ("hosts:2", got.pod);
  EXPECT_EQ("run: python3 train.py\n", got.spec_text);
  EXPECT_EQ("/home/u/bert.yaml", got.spec_path);
  EXPECT_EQ(created.hosts, got.hosts);
  EXPECT_EQ(created.created_ns, got.created_ns);
  EXPECT_EQ(created.env_overrides, got.env_overrides);
  EXPECT_EQ(created.secret_names, got.secret_names);
  EXPECT_EQ(R"({"identity":"/k"})", got.options_json);

  std::vector<JobHost> hosts = {{0, "", "localhost", 0, "127.0.0.1"}};
  store.SetJobHosts(created.id, hosts);
  EXPECT_EQ(hosts, store.GetJob(created.id).hosts);
  EXPECT_EQ(created.id, store.LatestJob()->id);
}

TEST_F(JobStoreTest, AttemptsAndWorkers) {
  JobStore store(db_);
  std::string id = store.CreateJob(SampleJob("bert")).id;
  EXPECT_FALSE(store.LatestAttempt(id));
  EXPECT_EQ(1, store.AddAttempt(id, {0, 1}, AttemptReason::kLaunch, 1000));

  std::vector<WorkerRecord> workers = store.Workers(id, 1);
  ASSERT_EQ(2u, workers.size());
  EXPECT_EQ(0, workers[0].index);
  EXPECT_EQ("10.0.0.2", workers[0].host);
  EXPECT_EQ("w1", workers[1].host);
  EXPECT_EQ(WorkerState::kPending, workers[1].state);
  EXPECT_FALSE(workers[1].exit_code || workers[1].signal || workers[1].start_ns ||
               workers[1].end_ns);
  EXPECT_EQ(0u, workers[1].last_seq);

  store.SetAttemptState(id, 1, AttemptState::kRunning);
  store.UpdateWorker(id, 1, 0, {.state = WorkerState::kRunning, .start_ns = 1100});
  store.UpdateWorker(id, 1, 1, {.state = WorkerState::kRunning, .start_ns = 1101});
  store.UpdateWorker(
      id, 1, 0, {.state = WorkerState::kExited, .exit_code = 0, .end_ns = 2000, .last_seq = 42});
  store.UpdateWorker(
      id, 1, 1, {.state = WorkerState::kFailed, .exit_code = 3, .end_ns = 1500, .error = "exit 3"});
  store.SetAttemptState(id, 1, AttemptState::kFailed, 1, 2100);

  workers = store.Workers(id, 1);
  EXPECT_EQ(WorkerState::kExited, workers[0].state);
  EXPECT_EQ(0, workers[0].exit_code);
  EXPECT_EQ(1100, workers[0].start_ns);  // unchanged by the later update
  EXPECT_EQ(2000, workers[0].end_ns);
  EXPECT_EQ(42u, workers[0].last_seq);
  EXPECT_EQ(WorkerState::kFailed, workers[1].state);
  EXPECT_EQ(3, workers[1].exit_code);
  EXPECT_EQ("exit 3", workers[1].error);

  AttemptRecord first = store.GetAttempt(id, 1);
  EXPECT_EQ(AttemptState::kFailed, first.state);
  EXPECT_EQ(1, first.exit_code);
  EXPECT_EQ(1000, first.started_ns);
  EXPECT_EQ(2100, first.ended_ns);
  EXPECT_EQ((std::vector<int>{0, 1}), first.workers);

  // rerun --failed: only worker 1, a new attempt of the same job.
  EXPECT_EQ(2, store.AddAttempt(id, {1}, AttemptReason::kLaunch, 3000));
  EXPECT_EQ(2, store.LatestAttempt(id)->number);
  EXPECT_EQ(AttemptState::kStarting, store.LatestAttempt(id)->state);
  EXPECT_EQ(1u, store.Workers(id, 2).size());
  EXPECT_EQ(2u, store.Attempts(id).size());

  EXPECT_THROW(store.UpdateWorker(id, 2, 0, {.state = WorkerState::kLost}), Error);
  EXPECT_THROW(store.SetAttemptState(id, 9, AttemptState::kFailed), Error);
  EXPECT_THROW(store.GetAttempt(id, 9), Error);
  EXPECT_THROW(store.AddAttempt(id, {5}, AttemptReason::kLaunch), Error);     // not in the pod
  EXPECT_THROW(store.AddAttempt(id, {1, 1}, AttemptReason::kLaunch), Error);  // twice
  EXPECT_THROW(store.AddAttempt("nope", {0}, AttemptReason::kLaunch), Error);
}

TEST_F(JobStoreTest, StateNames) {
  for (auto s : {WorkerState::kPending, WorkerState::kConnecting, WorkerState::kPrepared,
                 WorkerState::kRunning, WorkerState::kExited, WorkerState::kFailed,
                 WorkerState::kLost, WorkerState::kStopped}) {
    EXPECT_EQ(s, ParseWorkerState(WorkerStateName(s)));
  }
  EXPECT_STREQ("connecting", WorkerStateName(WorkerState::kConnecting));
  EXPECT_FALSE(ParseWorkerState("bogus"));
  EXPECT_STREQ("start_failed", AttemptStateName(AttemptState::kStartFailed));
  EXPECT_EQ(AttemptState::kSucceeded, ParseAttemptState("succeeded"));
}

TEST_F(JobStoreTest, ResolveByIdPrefixAndName) {
  JobStore store(db_);
  std::string a = store.CreateJob(SampleJob("train")).id;
  std::string b = store.CreateJob(SampleJob("train")).id;
  std::string c = store.CreateJob(SampleJob("eval")).id;

  EXPECT_EQ(a, store.ResolveJob(a).id);
  EXPECT_EQ(b, store.ResolveJob("train").id);  // the latest job of that name
  EXPECT_EQ(c, store.ResolveJob("eval").id);
  EXPECT_EQ(c, store.LatestJob()->id);
  // A unique prefix: the whole id minus its last character is unique unless two random suffixes
  // share 3 digits, so use the shortest prefix that only `a` has.
  for (size_t n = 1; n <= a.size(); ++n) {
    std::string prefix = a.substr(0, n);
    bool unique = b.rfind(prefix, 0) != 0 && c.rfind(prefix, 0) != 0;
    if (unique) {
      EXPECT_EQ(a, store.ResolveJob(prefix).id);
      break;
    }
  }
  // The date part is shared by all three: ambiguous, and every candidate is listed.
  std::string message = ErrorOf([&] { store.ResolveJob(a.substr(0, 8)); });
  EXPECT_NE(std::string::npos, message.find("ambiguous")) << message;
  for (const std::string& id : {a, b, c}) EXPECT_NE(std::string::npos, message.find(id));

  message = ErrorOf([&] { store.ResolveJob("nosuch"); });
  EXPECT_NE(std::string::npos, message.find("no job 'nosuch'; latest jobs: " + c + " (eval)"))
      << message;
  try {
    store.ResolveJob("nosuch");
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
  }
  EXPECT_THROW(store.GetJob("nosuch"), Error);
}

TEST_F(JobStoreTest, EmptyStore) {
  JobStore store(db_);
  EXPECT_FALSE(store.LatestJob());
  EXPECT_TRUE(store.ListJobs().empty());
  EXPECT_NE(std::string::npos,
            ErrorOf([&] { store.ResolveJob("x"); }).find("no job 'x' (no jobs yet)"));
}

TEST_F(JobStoreTest, ListNewestFirst) {
  JobStore store(db_);
  std::string a = store.CreateJob(SampleJob("one")).id;
  std::string b = store.CreateJob(SampleJob("two")).id;
  store.AddAttempt(a, {0, 1}, AttemptReason::kLaunch, 100);
  store.SetAttemptState(a, 1, AttemptState::kFailed, 1, 200);
  store.AddAttempt(a, {1}, AttemptReason::kLaunch, 300);
  store.SetAttemptState(a, 2, AttemptState::kSucceeded, 0, 450);

  std::vector<JobSummary> jobs = store.ListJobs();
  ASSERT_EQ(2u, jobs.size());
  EXPECT_EQ(b, jobs[0].id);
  EXPECT_EQ(0, jobs[0].attempts);
  EXPECT_FALSE(jobs[0].state);
  EXPECT_EQ(a, jobs[1].id);
  EXPECT_EQ("one", jobs[1].name);
  EXPECT_EQ("hosts:2", jobs[1].pod);
  EXPECT_EQ(2, jobs[1].attempts);
  EXPECT_EQ(AttemptState::kSucceeded, jobs[1].state);
  EXPECT_EQ(300, jobs[1].started_ns);
  EXPECT_EQ(450, jobs[1].ended_ns);
  EXPECT_EQ(1u, store.ListJobs(1).size());
}

TEST_F(JobStoreTest, TwoStoresOnOneFile) {
  JobStore launcher(db_);
  JobStore other(db_);  // e.g. `podrun status` in another terminal
  std::string id = launcher.CreateJob(SampleJob("bert")).id;
  EXPECT_EQ(id, other.ResolveJob("bert").id);
  int attempt = other.AddAttempt(id, {0, 1}, AttemptReason::kLaunch);
  launcher.UpdateWorker(id, attempt, 1, {.state = WorkerState::kRunning});
  EXPECT_EQ(WorkerState::kRunning, other.Workers(id, attempt)[1].state);
  EXPECT_EQ(2, launcher.AddAttempt(id, {0}, AttemptReason::kLaunch));  // numbers never collide
  JobStore moved = std::move(other);
  EXPECT_EQ(2u, moved.Attempts(id).size());
}

TEST_F(JobStoreTest, SchemaVersionAndWal) {
  { JobStore store(db_); }
  sqlite3* db = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_open(db_.c_str(), &db));
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr));
  ASSERT_EQ(SQLITE_ROW, sqlite3_step(st));
  EXPECT_EQ(kJobStoreSchemaVersion, sqlite3_column_int(st, 0));
  EXPECT_EQ(7, kJobStoreSchemaVersion);
  sqlite3_finalize(st);
  ASSERT_EQ(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, nullptr));
  ASSERT_EQ(SQLITE_ROW, sqlite3_step(st));
  EXPECT_STREQ("wal", reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  // A database from a newer podrun is refused, naming the file.
  ASSERT_EQ(SQLITE_OK, sqlite3_exec(db, "PRAGMA user_version=99", nullptr, nullptr, nullptr));
  sqlite3_close(db);
  std::string message = ErrorOf([&] { JobStore store(db_); });
  EXPECT_NE(std::string::npos, message.find(db_.string())) << message;
  EXPECT_NE(std::string::npos, message.find("newer podrun")) << message;
}

TEST_F(JobStoreTest, ErrorsNameTheDatabase) {
  std::string message = ErrorOf([&] { JobStore store(dir_ / "missing-dir" / "podrun.db"); });
  EXPECT_NE(std::string::npos, message.find((dir_ / "missing-dir" / "podrun.db").string()))
      << message;
}

TEST_F(JobStoreTest, NoSecretValueIsStored) {
  const std::string secret = "hunter2-very-secret-value";
  JobEnvParams params;
  params.job_id = "x";
  params.worker_addresses = {"10.0.0.2"};
  params.spec_env = {{"PROJECT", "bert"}};
  params.secrets = ReadSecrets(
      {"WANDB_API_KEY"}, [&](const std::string&) { return std::optional<std::string>(secret); });
  params.overrides = ParseEnvAssignments({"EPOCHS=3"});
  JobEnv env = BuildJobEnv(params);
  ASSERT_EQ(secret, env.vars["WANDB_API_KEY"]);

  {
    JobStore store(db_);
    JobRecord job = SampleJob("bert");
    job.env_overrides = params.overrides;
    job.secret_names = {"WANDB_API_KEY"};
    std::string id = store.CreateJob(job).id;
    store.AddAttempt(id, {0, 1}, AttemptReason::kLaunch);
    JobRecord bad = job;
    bad.env_overrides["WANDB_API_KEY"] = secret;  // a caller's mistake is refused
    EXPECT_THROW(store.CreateJob(bad), Error);
    EXPECT_EQ(std::vector<std::string>{"WANDB_API_KEY"}, store.GetJob(id).secret_names);
  }
  std::string bytes = AllBytes();
  EXPECT_NE(std::string::npos, bytes.find("WANDB_API_KEY"));
  EXPECT_EQ(std::string::npos, bytes.find(secret));
}

TEST_F(JobStoreTest, OpenDefaultUsesPodrunHome) {
  JobStore store =
      JobStore::OpenDefault([&](const std::string& name) -> std::optional<std::string> {
        if (name == "PODRUN_HOME") return (dir_ / "home").string();
        return std::nullopt;
      });
  EXPECT_EQ(dir_ / "home" / "podrun.db", store.path());
  EXPECT_TRUE(std::filesystem::exists(dir_ / "home" / "podrun.db"));
}

TEST_F(JobStoreTest, AttemptsOfASchema3StoreGetTheirReasonFromWhatTheyResumedFrom) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(SQLITE_OK, sqlite3_open(db_.c_str(), &db));
    for (int v = 0; v < 3; ++v) {
      ASSERT_EQ(SQLITE_OK, sqlite3_exec(db, JobStoreMigration(v), nullptr, nullptr, nullptr));
    }
    const char* rows =
        "PRAGMA user_version=3;"
        "INSERT INTO jobs (id, name, pod, spec_text, spec_path, hosts_json, created_ns, "
        "env_overrides_json, secret_names_json, options_json) VALUES ('j', 'j', 'hosts:1', '', "
        "'', '[]', 1, '{}', '[]', '{}');"
        "INSERT INTO attempts (job_id, number, started_ns, state, workers_json, resumed_from) "
        "VALUES ('j', 1, 1, 'failed', '[0]', NULL), ('j', 2, 2, 'failed', '[0]', 'hang'), "
        "('j', 3, 3, 'failed', '[0]', 'preemption'), ('j', 4, 4, 'failed', '[0]', NULL);";
    ASSERT_EQ(SQLITE_OK, sqlite3_exec(db, rows, nullptr, nullptr, nullptr));
    sqlite3_close(db);
  }
  JobStore store(db_);
  const auto attempts = store.Attempts("j");
  ASSERT_EQ(4u, attempts.size());
  EXPECT_EQ(AttemptReason::kLaunch, attempts[0].reason);
  EXPECT_EQ(AttemptReason::kRestartAfterHang, attempts[1].reason);
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, attempts[2].reason);
  EXPECT_EQ(AttemptReason::kRerun, attempts[3].reason);
}

TEST_F(JobStoreTest, RecoveryRecords) {
  JobStore store(db_);
  RecoveryRecords records(store);
  JobRecord job = store.CreateJob(SampleJob("spot"));
  store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch);
  store.SetAttemptEnd(job.id, 1, AttemptEnd::kFailure, "w1: lost: preempted");
  const int64_t id = records.AddPreemption(job.id, {.id = 0,
                                                    .attempt = 1,
                                                    .node = "node-1",
                                                    .state = "PREEMPTED",
                                                    .seen_ns = 1000,
                                                    .back_ns = std::nullopt,
                                                    .recreated = true});
  store.SetAttemptEnd(job.id, 1, AttemptEnd::kPreemption);  // the cause said stays
  const int second = store.AddAttempt(job.id, {0, 1}, AttemptReason::kRecoveryAfterPreemption);
  records.SetPreemptionBack(id, 5000);
  EXPECT_EQ("w1: lost: preempted", store.GetAttempt(job.id, 1).cause);
  EXPECT_EQ(AttemptEnd::kPreemption, store.GetAttempt(job.id, 1).ended_by);
  EXPECT_EQ("", store.GetAttempt(job.id, 1).resumed_from);
  EXPECT_EQ("preemption", store.GetAttempt(job.id, second).resumed_from);
  EXPECT_EQ(AttemptReason::kRecoveryAfterPreemption, store.GetAttempt(job.id, second).reason);
  const auto preemptions = records.Preemptions(job.id);
  ASSERT_EQ(1u, preemptions.size());
  EXPECT_EQ(1, preemptions[0].attempt);
  EXPECT_EQ("node-1", preemptions[0].node);
  EXPECT_EQ("PREEMPTED", preemptions[0].state);
  EXPECT_EQ(1000, preemptions[0].seen_ns);
  EXPECT_EQ(5000, preemptions[0].back_ns);
  EXPECT_TRUE(preemptions[0].recreated);

  EXPECT_FALSE(records.GetKeeper(job.id));
  records.SetKeeper(job.id, 4242, "4242 17 boot", "laptop");
  auto keeper = records.GetKeeper(job.id);
  ASSERT_TRUE(keeper);
  EXPECT_EQ(4242, keeper->pid);
  EXPECT_EQ("4242 17 boot", keeper->identity);
  EXPECT_EQ("laptop", keeper->host);
  EXPECT_FALSE(keeper->ended_ns);
  records.EndKeeper(job.id, "the job ended: succeeded");
  keeper = records.GetKeeper(job.id);
  ASSERT_TRUE(keeper && keeper->ended_ns);
  EXPECT_EQ("the job ended: succeeded", keeper->end_note);
  records.SetKeeper(job.id, 4343, "4343 18 boot", "vm");  // `podrun watch` later: replaced
  keeper = records.GetKeeper(job.id);
  EXPECT_EQ(4343, keeper->pid);
  EXPECT_FALSE(keeper->ended_ns);

  EXPECT_FALSE(records.Recovering(job.id));
  records.SetRecovering(job.id, {RecoveringPhase::kRecreating, "tpu node-1",
                                 "recreating TPU node node-1 (PREEMPTED)", 0});
  const auto since = records.Recovering(job.id)->since_ns;
  EXPECT_EQ(RecoveringPhase::kRecreating, records.Recovering(job.id)->phase);
  EXPECT_EQ("tpu node-1", records.Recovering(job.id)->slice);
  records.SetRecovering(job.id, {RecoveringPhase::kApiOutage, "", "waiting for capacity", 0});
  EXPECT_EQ("waiting for capacity", records.Recovering(job.id)->what);
  EXPECT_EQ(RecoveringPhase::kApiOutage, records.Recovering(job.id)->phase);
  EXPECT_EQ("", records.Recovering(job.id)->slice);
  EXPECT_EQ(since, records.Recovering(job.id)->since_ns);  // since the recovery began
  records.EndRecovering(job.id);
  EXPECT_FALSE(records.Recovering(job.id));

  records.BeginRecreation(job.id, {"mig", "node-1", "z", "p", 0});
  ASSERT_EQ(1u, records.Recreations(job.id).size());
  EXPECT_EQ("node-1", records.Recreations(job.id)[0].node);
  EXPECT_EQ("mig", records.Recreations(job.id)[0].kind);
  records.EndRecreation(job.id, {"mig", "node-1", "z", "p", 0});
  EXPECT_TRUE(records.Recreations(job.id).empty());
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(RunRecordsTest, ProgressSamplesPhasesAndTheHangReportRoundTrip) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("run-records-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  JobStore store(dir / "podrun.db");
  JobRecord job;
  job.name = "j";
  job.pod = "hosts:2";
  job.spec_text = "run: x\n";
  job.spec_path = "j.yaml";
  job.hosts = {{0, "u", "a", 22, "a"}, {1, "u", "b", 22, "b"}};
  job = store.CreateJob(job);
  const int attempt = store.AddAttempt(job.id, {0, 1}, AttemptReason::kLaunch, 100);
  RunRecords records(store);
  // Nothing recorded yet: every worker without a step.
  auto none = records.Progress(job.id, attempt);
  ASSERT_EQ(2u, none.size());
  EXPECT_FALSE(none[1].step.has_value());
  records.SaveProgress(job.id, attempt,
                       {{.worker = 1,
                         .step = 7,
                         .step_ns = 900,
                         .first_step_ns = 300,
                         .steps_per_s = 0.5,
                         .straggler = StragglerNote{0.5, 1.0}}},
                       {{.worker = 1, .replace = false, .samples = {{300, 1}, {900, 7}}}});
  records.SaveProgress(job.id, attempt, {},
                       {{.worker = 1, .replace = true, .samples = {{300, 1}}},
                        {.worker = 0, .replace = false, .samples = {{400, 2}}}});
  auto progress = records.Progress(job.id, attempt);
  EXPECT_EQ(7, progress[1].step);
  EXPECT_EQ(900, progress[1].step_ns);
  EXPECT_EQ(300, progress[1].first_step_ns);
  EXPECT_DOUBLE_EQ(0.5, *progress[1].steps_per_s);
  ASSERT_TRUE(progress[1].straggler);
  EXPECT_EQ("0.50 steps/s vs median 1.00", progress[1].straggler->Text());
  EXPECT_FALSE(progress[0].straggler);
  EXPECT_EQ((std::vector<StepSample>{{300, 1}}), records.StepSamples(job.id, attempt, 1));
  EXPECT_EQ((std::vector<StepSample>{{400, 2}}), records.StepSamples(job.id, attempt, 0));
  records.SetPhases(job.id, attempt,
                    {{.worker = 0, .phase = "agents", .start_ns = 1, .end_ns = 5, .failed = false},
                     {.worker = 0, .phase = "sync", .start_ns = 5, .end_ns = {}, .failed = true}});
  auto phases = records.Phases(job.id, attempt);
  ASSERT_EQ(2u, phases.size());
  EXPECT_EQ("sync", phases[1].phase);
  EXPECT_FALSE(phases[1].end_ns.has_value());
  EXPECT_TRUE(phases[1].failed);
  EXPECT_FALSE(records.HangReport(job.id, attempt).has_value());
  records.SetHangReport(job.id, attempt, {.made_ns = 42, .text = "why: ...", .json = "{}"});
  EXPECT_EQ("why: ...", records.HangReport(job.id, attempt)->text);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace podrun
