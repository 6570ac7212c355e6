// Tests of a job's locks and of replacing a preparation: reading the job's directory (which
// may hang, on NFS) holds neither the job's lock nor the runner's, and a replaced preparation
// whose supervisor cannot be told to DISCARD fails the new Prepare instead of leaving an
// attempt that reads as never started. A Prepare that cannot write (a full disk) leaves nothing,
// and a Stop of an attempt that never started answers at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/job/job_runner.h"
#include "worker/supervisor/supervisor.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

// A job's file on a hung file system: a FIFO, whose readers block until Release.
class HungFile {
 public:
  explicit HungFile(std::filesystem::path path) : path_(std::move(path)) {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    content_ = ss.str();
    std::filesystem::remove(path_);
    EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0) << path_;
  }
  ~HungFile() { Release(); }
  HungFile(const HungFile&) = delete;
  HungFile& operator=(const HungFile&) = delete;

  // Waits until a reader has opened it (it then blocks reading); false if none did in 60 s.
  bool WaitForReader() {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      // Opening for writing without blocking succeeds only while a reader has it open.
      writer_.reset(::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
      if (writer_) return true;
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }

  // The reader gets the file's old content, then end-of-file; the path is that file again.
  void Release() {
    if (released_) return;
    released_ = true;
    if (!writer_) writer_.reset(::open(path_.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC));
    EXPECT_EQ(::write(writer_.get(), content_.data(), content_.size()),
              static_cast<ssize_t>(content_.size()));
    writer_.reset();
    std::filesystem::remove(path_);
    if (!content_.empty()) std::ofstream(path_) << content_;
  }

 private:
  const std::filesystem::path path_;
  std::string content_;
  UniqueFd writer_;
  bool released_ = false;
};

class JobLifetimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "joblifetime.XXXXXX").string();
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
    spec.workdir = (home_ / "work").string();
    spec.run = run;
    return spec;
  }

  std::filesystem::path home_;
  std::unique_ptr<JobRunner> runner_;
};

TEST_F(JobLifetimeTest, ReadingTheJobsDirectoryHoldsNoLock) {
  runner_->Prepare(Spec("hung", "true"));
  const auto job = runner_->Find("hung", 1);
  ASSERT_TRUE(job);
  EXPECT_TRUE(runner_->Stop("hung", 1, 1s).exit.never_started);
  const JobDir dir(home_ / "agent", "hung", 1);
  {
    // Start reads why the attempt cannot start; meanwhile the job answers others.
    HungFile exit_status(dir.path() / "exit_status");
    std::string error;
    std::thread start([&] {
      try {
        runner_->Start("hung", 1);
      } catch (const AgentError& e) {
        error = e.what();
      }
    });
    EXPECT_TRUE(exit_status.WaitForReader());
    auto prepared = std::async(std::launch::async, [&] { return job->prepared(); });
    EXPECT_EQ(prepared.wait_for(30s), std::future_status::ready)
        << "Job::prepared waits for a read of the job's directory";
    exit_status.Release();
    start.join();
    EXPECT_FALSE(prepared.get());
    EXPECT_NE(error.find("stopped before it started"), std::string::npos) << error;
  }
  {
    // RunningJobs reads the job's pid; meanwhile the runner answers others.
    HungFile pid(dir.path() / "pid");
    int running = -1;
    std::thread count([&] { running = runner_->RunningJobs(); });
    EXPECT_TRUE(pid.WaitForReader());
    auto found = std::async(std::launch::async, [&] { return runner_->Find("hung", 1); });
    EXPECT_EQ(found.wait_for(30s), std::future_status::ready)
        << "JobRunner::Find waits for a read of a job's directory";
    pid.Release();
    count.join();
    EXPECT_EQ(found.get(), job);
    EXPECT_EQ(running, 0);
  }
}

TEST_F(JobLifetimeTest, AReplacedPreparationThatCannotBeDiscardedFailsThePrepare) {
  runner_->Prepare(Spec("deaf", "true"));
  const JobDir dir(home_ / "agent", "deaf", 1);
  const auto supervisor = dir.ReadSupervisor();
  ASSERT_TRUE(supervisor);
  // Without its control socket the supervisor cannot be told that it is replaced: it records
  // the attempt as never started once its prepared process ends.
  ASSERT_TRUE(std::filesystem::remove(SupervisorSocketPath(home_ / "agent", supervisor->pid)));
  std::string error;
  try {
    runner_->Prepare(Spec("deaf", "true"));
  } catch (const AgentError& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("did not take DISCARD"), std::string::npos) << error;
  EXPECT_EQ(runner_->Find("deaf", 1), nullptr);
  // The attempt is spent: it cannot be prepared again.
  EXPECT_THROW(runner_->Prepare(Spec("deaf", "true")), AgentError);
}

// A Prepare that cannot write the job's directory (a full disk, here a directory in the way of
// its first file) leaves nothing behind, and a Stop that follows answers at once.
TEST_F(JobLifetimeTest, APrepareThatCannotWriteLeavesNothingAndStopAnswersAtOnce) {
  const JobDir dir(home_ / "agent", "unwritable", 1);
  std::filesystem::create_directories(dir.path() / "worker_id" / "in-the-way");
  EXPECT_THROW(runner_->Prepare(Spec("unwritable", "echo never")), AgentError);
  EXPECT_FALSE(std::filesystem::exists(dir.path()));
  EXPECT_EQ(runner_->Find("unwritable", 1), nullptr);
  try {
    runner_->Stop("unwritable", 1, 30s);
    ADD_FAILURE() << "Stop of a job that was never prepared succeeded";
  } catch (const AgentError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound) << e.what();
  }
}

// A directory left by an agent that died while preparing: Stop does not wait for an outcome
// that no process will ever record (it waited grace + 30 s).
TEST_F(JobLifetimeTest, StopOfAJobThatNeverStartedDoesNotWait) {
  const JobDir dir(home_ / "agent", "orphan", 1);
  dir.Create();
  dir.WriteWorkerId(3);
  const auto began = std::chrono::steady_clock::now();
  try {
    runner_->Stop("orphan", 1, 30s);
    ADD_FAILURE() << "Stop of a job that never started succeeded";
  } catch (const AgentError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("never started"), std::string::npos) << e.what();
  }
  // Far below the 30 s grace it would have waited (a generous bound for a loaded machine).
  EXPECT_LT(std::chrono::steady_clock::now() - began, 20s);
}

}  // namespace
}  // namespace podrun::agent
