// Tests of process supervision: env and cwd reach the process, exit codes and signals are
// recorded on disk, output is logged in order, and Stop ends a whole process group. The
// process forked by Prepare waits for Start, is released by it, and never outlives an
// attempt that does not start.
#include "worker/job/job_runner.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "proto/log_record.h"
#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

class JobRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "jobrunner.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    home_ = tmpl;
    runner_ = std::make_unique<JobRunner>(home_ / "agent", PODRUN_AGENT_BINARY);
  }
  void TearDown() override {
    if (runner_) runner_->StopAll();  // jobs outlive their runner (they have supervisors)
    runner_.reset();
    std::filesystem::remove_all(home_);
  }

  JobRequest Spec(const std::string& id, const std::string& run) {
    JobRequest spec;
    spec.job_id = id;
    spec.attempt = 1;
    spec.worker_id = 3;
    spec.workdir = (home_ / "work").string();
    spec.run = run;
    return spec;
  }

  // Runs to completion; returns the snapshot at the end.
  JobSnapshot RunToEnd(const JobRequest& spec) {
    runner_->Prepare(spec);
    runner_->Start(spec.job_id, spec.attempt);
    auto job = runner_->Find(spec.job_id, spec.attempt);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!job->Snapshot().exit && std::chrono::steady_clock::now() < deadline) {
      job->WaitForProgress(job->Snapshot().last_seq, deadline);
    }
    return job->Snapshot();
  }

  // The job's stdout (or stderr), concatenated from its log records.
  std::string Stdout(const std::string& id, LogStream stream = LogStream::kStdout) {
    LogReader reader(JobDir(home_ / "agent", id, 1).log_path());
    std::string out;
    for (auto batch = reader.ReadSome(); !batch.empty(); batch = reader.ReadSome()) {
      for (auto& r : batch) {
        if (r.stream == stream) out += r.data;
      }
    }
    return out;
  }

  std::filesystem::path home_;
  std::unique_ptr<JobRunner> runner_;
};

TEST_F(JobRunnerTest, EnvAndWorkdirReachTheProcess) {
  JobRequest spec = Spec("env", "echo \"$PODRUN_TEST_SECRET|$(pwd)|$HOME\"");
  spec.env["PODRUN_TEST_SECRET"] = "s3cr3t value";
  JobSnapshot snap = RunToEnd(spec);
  ASSERT_TRUE(snap.exit);
  EXPECT_EQ(snap.exit->exit_code, 0);
  EXPECT_EQ(snap.state, JobState::kExited);
  const std::string home = std::getenv("HOME");
  EXPECT_EQ(Stdout("env"), "s3cr3t value|" + std::filesystem::canonical(home_ / "work").string() +
                               "|" + home + "\n");
  // The secret is in the log (the process printed it) but in no other file of the job.
  for (const auto& entry :
       std::filesystem::directory_iterator(JobDir(home_ / "agent", "env", 1).path())) {
    if (entry.path().filename() == "log") continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(ss.str().find("s3cr3t"), std::string::npos) << entry.path();
  }
}

TEST_F(JobRunnerTest, ExitCodeAndSignalAreRecorded) {
  JobSnapshot exited = RunToEnd(Spec("code", "echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(exited.exit);
  EXPECT_EQ(exited.exit->exit_code, 3);
  EXPECT_FALSE(exited.exit->signal);
  EXPECT_EQ(exited.last_seq, 2u);

  JobSnapshot killed = RunToEnd(Spec("sig", "kill -9 $$"));
  ASSERT_TRUE(killed.exit);
  EXPECT_EQ(killed.exit->signal, SIGKILL);

  // The outcome is on disk, and a fresh runner (a later agent process) reads it from there.
  JobDir dir(home_ / "agent", "code", 1);
  auto on_disk = dir.ReadProcessEnd();
  ASSERT_TRUE(on_disk);
  EXPECT_EQ(*on_disk, *exited.exit);
  EXPECT_EQ(dir.ReadWorkerId(), 3u);
  EXPECT_EQ(dir.ReadPid(), exited.pid);
  JobRunner later(home_ / "agent", PODRUN_AGENT_BINARY);
  JobSnapshot from_disk = later.Status("code", 1);
  EXPECT_EQ(from_disk.state, JobState::kExited);
  EXPECT_EQ(from_disk.exit->exit_code, 3);
  EXPECT_EQ(from_disk.last_seq, 2u);
  EXPECT_EQ(from_disk.pid, exited.pid);
  EXPECT_THROW(later.Status("nope", 1), AgentError);
}

TEST_F(JobRunnerTest, OutputIsLoggedInOrder) {
  JobSnapshot snap = RunToEnd(Spec("lines", "for i in $(seq 1 5000); do echo line $i; done"));
  ASSERT_TRUE(snap.exit);
  std::string expected;
  for (int i = 1; i <= 5000; ++i) expected += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(Stdout("lines"), expected);
}

TEST_F(JobRunnerTest, StopKillsTheWholeProcessGroup) {
  // A grandchild that ignores SIGTERM: only the SIGKILL after the grace period ends it. It
  // prints its pid only once the trap is set, so the stop cannot reach it before.
  JobRequest spec =
      Spec("stop", "(trap '' TERM; echo $BASHPID; exec sleep 1000) & sleep 1000; wait");
  runner_->Prepare(spec);
  StartResult start = runner_->Start("stop", 1);
  EXPECT_GT(start.pid, 0);
  EXPECT_GT(start.start_time_ns, 0);
  EXPECT_TRUE(runner_->Start("stop", 1).already_started);
  auto job = runner_->Find("stop", 1);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (job->Snapshot().last_seq == 0) job->WaitForProgress(0, deadline);
  const pid_t grandchild = std::stoi(Stdout("stop"));
  EXPECT_EQ(::kill(grandchild, 0), 0);
  EXPECT_EQ(runner_->RunningJobs(), 1);

  StopResult stop = runner_->Stop("stop", 1, 1s);
  EXPECT_TRUE(stop.was_running);
  EXPECT_TRUE(stop.killed);
  EXPECT_TRUE(stop.exit.stopped_by_request);
  EXPECT_EQ(stop.exit.signal, SIGTERM);  // bash itself ended on SIGTERM
  EXPECT_NE(::kill(-start.pid, 0), 0);   // no process of the group remains
  EXPECT_EQ(errno, ESRCH);
  EXPECT_EQ(runner_->Status("stop", 1).state, JobState::kStopped);
  EXPECT_EQ(runner_->RunningJobs(), 0);
  // Stopping again reports the outcome without signalling anything.
  EXPECT_FALSE(runner_->Stop("stop", 1, 1s).was_running);
}

TEST_F(JobRunnerTest, LeftoverProcessesEndWithTheLeader) {
  JobSnapshot snap = RunToEnd(Spec("bg", "sleep 1000 & echo started"));
  ASSERT_TRUE(snap.exit);
  EXPECT_EQ(snap.exit->exit_code, 0);
  EXPECT_NE(::kill(-snap.pid, 0), 0);
}

TEST_F(JobRunnerTest, StopBeforeStartStartsNothing) {
  runner_->Prepare(Spec("never", "echo never"));
  StopResult stop = runner_->Stop("never", 1, 1s);
  EXPECT_FALSE(stop.was_running);
  EXPECT_TRUE(stop.exit.never_started);
  EXPECT_THROW(runner_->Start("never", 1), AgentError);
  EXPECT_EQ(runner_->Status("never", 1).state, JobState::kStopped);
}

// True while `pid` exists and is not a zombie.
bool ProcessLives(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

TEST_F(JobRunnerTest, PrepareForksAProcessThatWaitsForStart) {
  // The script would leave a marker; until Start it must not run.
  const std::filesystem::path marker = home_ / "marker";
  runner_->Prepare(Spec("early", "touch " + marker.string() + "; date +%s%N"));
  auto job = runner_->Find("early", 1);
  const pid_t waiting = job->waiting_pid();
  ASSERT_GT(waiting, 0);
  EXPECT_TRUE(ProcessLives(waiting));
  EXPECT_EQ(::getsid(waiting), waiting);  // it leads its own session and process group
  EXPECT_EQ(::getpgid(waiting), waiting);
  EXPECT_EQ(job->Snapshot().pid, 0);
  EXPECT_EQ(job->Snapshot().state, JobState::kPrepared);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(std::filesystem::exists(marker));

  // The start time is taken when it is released, not when it was forked.
  const int64_t before = WallClockNs();
  StartResult start = runner_->Start("early", 1);
  const int64_t after = WallClockNs();
  EXPECT_EQ(start.pid, waiting);  // the prepared process is the job's
  EXPECT_GE(start.start_time_ns, before);
  EXPECT_LE(start.start_time_ns, after);
  EXPECT_EQ(job->waiting_pid(), 0);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!job->Snapshot().exit && std::chrono::steady_clock::now() < deadline) {
    job->WaitForProgress(job->Snapshot().last_seq, deadline);
  }
  ASSERT_TRUE(job->Snapshot().exit);
  EXPECT_EQ(job->Snapshot().exit->exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(marker));
  // The script ran after the release.
  EXPECT_GE(std::stoll(Stdout("early")), start.start_time_ns);
  EXPECT_EQ(JobDir(home_ / "agent", "early", 1).ReadStartTime(), start.start_time_ns);
}

TEST_F(JobRunnerTest, StartWaitsForItsInstantWithoutHoldingTheJob) {
  runner_->Prepare(Spec("later", "true"));
  const int64_t at = WallClockNs() + 300'000'000;
  StartResult start = runner_->Start("later", 1, at);
  EXPECT_GE(start.start_time_ns, at);
  EXPECT_LT(start.start_time_ns, at + 200'000'000);
  // The calling thread is back to its own scheduling policy (it may have been real-time).
  int policy = -1;
  sched_param param{};
  ASSERT_EQ(::pthread_getschedparam(::pthread_self(), &policy, &param), 0);
  EXPECT_EQ(policy, SCHED_OTHER);
  // An instant absurdly far ahead (a clock mix-up) does not hold the job back.
  runner_->Prepare(Spec("far", "true"));
  const int64_t before = WallClockNs();
  EXPECT_LT(runner_->Start("far", 1, before + 3600'000'000'000).start_time_ns,
            before + 1'000'000'000);

  // A Stop while Start waits is not held up, and wins.
  runner_->Prepare(Spec("waiting", "echo ran"));
  const pid_t waiting = runner_->Find("waiting", 1)->waiting_pid();
  std::string start_error;
  std::thread starter([&] {
    try {
      runner_->Start("waiting", 1, WallClockNs() + 2'000'000'000);
    } catch (const AgentError& e) {
      start_error = e.what();
    }
  });
  // Stopped while Start waits for its instant (not before Start began waiting).
  const auto job = runner_->Find("waiting", 1);
  const auto wait_deadline = std::chrono::steady_clock::now() + 30s;
  while (!job->starting() && std::chrono::steady_clock::now() < wait_deadline) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(job->starting());  // (no ASSERT: the starter thread must be joined)
  const auto stop_began = std::chrono::steady_clock::now();
  StopResult stop = runner_->Stop("waiting", 1, 1s);
  EXPECT_LT(std::chrono::steady_clock::now() - stop_began, 1s);
  EXPECT_TRUE(stop.exit.never_started);
  EXPECT_NE(::kill(waiting, 0), 0);
  starter.join();
  EXPECT_NE(start_error.find("stopped before it started"), std::string::npos) << start_error;
  EXPECT_EQ(Stdout("waiting"), "");
}

TEST_F(JobRunnerTest, APreparedJobThatNeverStartsLeavesNoProcess) {
  const std::filesystem::path marker = home_ / "marker";
  const std::string run = "touch " + marker.string();

  // Stop before Start.
  runner_->Prepare(Spec("stopped", run));
  const pid_t stopped = runner_->Find("stopped", 1)->waiting_pid();
  ASSERT_GT(stopped, 0);
  StopResult stop = runner_->Stop("stopped", 1, 1s);
  EXPECT_TRUE(stop.exit.never_started);
  EXPECT_EQ(runner_->Find("stopped", 1)->waiting_pid(), 0);
  EXPECT_NE(::kill(stopped, 0), 0);  // reaped: not even a zombie remains
  EXPECT_EQ(errno, ESRCH);
  EXPECT_EQ(runner_->Status("stopped", 1).pid, 0);

  // Re-preparing replaces the attempt and its process.
  runner_->Prepare(Spec("again", run));
  const pid_t first = runner_->Find("again", 1)->waiting_pid();
  runner_->Prepare(Spec("again", run));
  const pid_t second = runner_->Find("again", 1)->waiting_pid();
  EXPECT_NE(first, second);
  EXPECT_NE(::kill(first, 0), 0);
  EXPECT_TRUE(ProcessLives(second));

  // The runner going away (the agent exiting) ends the waiting processes.
  runner_->Prepare(Spec("idle", run));
  const pid_t idle = runner_->Find("idle", 1)->waiting_pid();
  runner_.reset();
  EXPECT_NE(::kill(second, 0), 0);
  EXPECT_NE(::kill(idle, 0), 0);
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST_F(JobRunnerTest, AWaitingProcessExitsWhenTheAgentIsGone) {
  // An "agent" process prepares a job and dies without cleaning up: its waiting process must
  // exit on end-of-file without running the script, and its supervisor records that.
  const std::filesystem::path marker = home_ / "marker";
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t agent = ::fork();
  ASSERT_GE(agent, 0);
  if (agent == 0) {
    pid_t waiting = 0;
    try {
      auto* runner = new JobRunner(home_ / "agent2", PODRUN_AGENT_BINARY);  // never destroyed
      runner->Prepare(Spec("orphan", "touch " + marker.string()));
      waiting = runner->Find("orphan", 1)->waiting_pid();
    } catch (...) {
    }
    (void)!::write(fds[1], &waiting, sizeof waiting);
    ::_exit(0);  // no destructors: like an agent killed by a signal
  }
  ::close(fds[1]);
  pid_t waiting = 0;
  EXPECT_EQ(::read(fds[0], &waiting, sizeof waiting), static_cast<ssize_t>(sizeof waiting));
  ::close(fds[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(agent, &status, 0), agent);
  ASSERT_GT(waiting, 0);
  const JobDir dir(home_ / "agent2", "orphan", 1);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!dir.ReadProcessEnd() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  auto exit = dir.ReadProcessEnd();
  ASSERT_TRUE(exit);
  EXPECT_TRUE(exit->never_started);
  EXPECT_FALSE(ProcessLives(waiting));
  EXPECT_FALSE(std::filesystem::exists(marker));
  // A later agent reads the same outcome.
  JobRunner later(home_ / "agent2", PODRUN_AGENT_BINARY);
  EXPECT_EQ(later.Status("orphan", 1).state, JobState::kExited);
}

// A HOME of its own for a job, with `text` as its login shell's ~/.bash_profile.
std::filesystem::path HomeWithProfile(const std::filesystem::path& dir, const std::string& text) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / ".bash_profile") << text;
  return dir;
}

std::string ReadText(const std::filesystem::path& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

TEST_F(JobRunnerTest, TheLoginProfileIsReadAtPrepareAndTheRunAtTheStart) {
  // The profile's work is done before the lockstep instant; the run then runs in the same
  // shell (a variable the profile did not export reaches it, as in bash -lc), and neither the
  // profile's functions, its aliases nor its TMOUT change how the shell waits.
  const std::filesystem::path home =
      HomeWithProfile(home_ / "user",
                      "echo profile >> \"$HOME/order\"; FROM_PROFILE=set; readonly TMOUT=1\n"
                      "shopt -s expand_aliases; alias read='echo hijacked'\n"
                      "printf() { echo hijacked; }; exit() { echo hijacked; }\n");
  JobRequest spec = Spec("profile", "echo \"run $FROM_PROFILE\" >> \"$HOME/order\"; echo ran");
  spec.env["HOME"] = home.string();
  runner_->Prepare(spec);
  EXPECT_EQ(ReadText(home / "order"), "profile\n");
  std::this_thread::sleep_for(1500ms);  // past the profile's TMOUT: the shell still waits
  EXPECT_EQ(ReadText(home / "order"), "profile\n");  // nothing of the run before Start
  runner_->Start("profile", 1);
  auto job = runner_->Find("profile", 1);
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!job->Snapshot().exit && std::chrono::steady_clock::now() < deadline) {
    job->WaitForProgress(job->Snapshot().last_seq, deadline);
  }
  ASSERT_EQ(job->Snapshot().exit.value_or(ProcessEnd{}).exit_code, 0);
  EXPECT_EQ(ReadText(home / "order"), "profile\nrun set\n");
  EXPECT_EQ(Stdout("profile"), "ran\n");  // no "hijacked"
}

TEST_F(JobRunnerTest, ALoginShellThatEndsBeforeItIsReadyFailsPrepare) {
  // Its profile exits: Prepare fails (nothing starts anywhere) and says why; the run never ran.
  const std::filesystem::path marker = home_ / "marker";
  JobRequest spec = Spec("exits", "touch " + marker.string());
  spec.env["HOME"] = HomeWithProfile(home_ / "user", "exit 3\n").string();
  try {
    runner_->Prepare(spec);
    ADD_FAILURE() << "prepared";
  } catch (const AgentError& e) {
    EXPECT_NE(std::string(e.what()).find("ended before it was ready"), std::string::npos);
  }
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(runner_->RunningJobs(), 0);
}

TEST_F(JobRunnerTest, BadRequestsAreRefused) {
  EXPECT_THROW(runner_->Prepare(Spec("../x", "true")), AgentError);
  EXPECT_THROW(runner_->Prepare(Spec("ok", "")), AgentError);
  JobRequest bad_env = Spec("ok", "true");
  bad_env.env["A=B"] = "x";
  EXPECT_THROW(runner_->Prepare(bad_env), AgentError);
  EXPECT_THROW(runner_->Start("unprepared", 1), AgentError);
  RunToEnd(Spec("twice", "true"));
  EXPECT_THROW(runner_->Prepare(Spec("twice", "true")), AgentError);
}

TEST(ResolveWorkdirTest, ExpandsHome) {
  const std::filesystem::path home = std::filesystem::canonical(std::getenv("HOME"));
  EXPECT_EQ(ResolveWorkdir("~"), home);
  EXPECT_EQ(ResolveWorkdir(""), home);
  EXPECT_THROW(ResolveWorkdir("~other/x"), AgentError);
  EXPECT_THROW(ResolveWorkdir("/proc/self/nonexistent/x"), AgentError);
}

TEST(ResolveWorkdirTest, AWorkdirAnotherUserCouldChangeIsRefused) {
  const std::filesystem::path base =
      std::filesystem::path(::testing::TempDir()) / ("workdir-owner-" + std::to_string(::getpid()));
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base / "mine");
  ::chmod((base / "mine").c_str(), 0755);
  EXPECT_EQ(ResolveWorkdir((base / "mine").string()), std::filesystem::canonical(base / "mine"));
  auto refusal = [](const std::filesystem::path& dir) {
    try {
      ResolveWorkdir(dir.string());
    } catch (const AgentError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // Writable by everyone: another user could plant what the job runs.
  std::filesystem::create_directories(base / "open");
  ASSERT_EQ(0, ::chmod((base / "open").c_str(), 0777));
  EXPECT_NE(refusal(base / "open").find("writable by other users"), std::string::npos);
  // Owned by another user (the test may chown only as root).
  if (::geteuid() == 0) {
    std::filesystem::create_directories(base / "theirs");
    ASSERT_EQ(0, ::chown((base / "theirs").c_str(), 65534, 65534));
    EXPECT_NE(refusal(base / "theirs").find("owned by uid 65534"), std::string::npos);
  }
  std::filesystem::remove_all(base);
}

}  // namespace
}  // namespace podrun::agent
