// Tests of the one-driver-per-job lock with real processes: another process's lock is seen with
// its pid and what it drives as, and refused; it goes with the process, even one killed with
// SIGKILL.
#include "launcher/recovery/driver_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "launcher/base/error.h"

namespace podrun {
namespace {

class DriverLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::temp_directory_path() /
            ("podrun-keeper-lock-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(home_);
    std::filesystem::create_directories(home_);
    std::filesystem::permissions(home_, std::filesystem::perms::owner_all);
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  std::filesystem::path home_;
};

TEST_F(DriverLockTest, OneHolderAtATimeAndTheLockGoesWithItsProcess) {
  EXPECT_FALSE(DriverHolder(home_, "job-1"));  // no lock file yet
  int ready[2];
  ASSERT_EQ(0, ::pipe(ready));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = DriverLock::TryAcquire(home_, "job-1", DriverRole::kAttachedLaunch);
    char c = lock ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(1, ::read(ready[0], &c, 1));
  ASSERT_EQ('y', c);
  EXPECT_EQ(child, DriverHolder(home_, "job-1"));
  // Who drives, as `podrun watch` says it.
  const std::optional<Driver> driver = CurrentDriver(home_, "job-1");
  ASSERT_TRUE(driver);
  EXPECT_EQ(child, driver->pid);
  EXPECT_EQ(DriverRole::kAttachedLaunch, driver->role);
  EXPECT_EQ(ThisHostName(), driver->host);
  EXPECT_FALSE(DriverLock::TryAcquire(home_, "job-1"));  // a second keeper never runs
  EXPECT_FALSE(DriverHolder(home_, "job-2"));            // per job
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(DriverHolder(home_, "job-1"));
  EXPECT_FALSE(CurrentDriver(home_, "job-1"));
  EXPECT_TRUE(DriverLock::TryAcquire(home_, "job-1"));
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_F(DriverLockTest, ASymlinkPlantedAsTheLockIsRefused) {
  std::filesystem::create_directories(home_ / "jobs" / "job-3");
  std::filesystem::permissions(home_ / "jobs", std::filesystem::perms::owner_all);
  std::filesystem::permissions(home_ / "jobs" / "job-3", std::filesystem::perms::owner_all);
  std::filesystem::create_symlink("/etc/passwd", home_ / "jobs" / "job-3" / "keeper.lock");
  EXPECT_ANY_THROW(DriverLock::TryAcquire(home_, "job-3"));
}

// A launch takes its new job's lock before the job has an attempt: a `podrun watch` that saw the
// job in between holds it a moment (it finds nothing to watch) and is waited for; one that
// holds on is refused, named, and never driven beside.
TEST_F(DriverLockTest, ANewDriverWaitsForTheHolderOrRefusesNamingIt) {
  int ready[2];
  ASSERT_EQ(0, ::pipe(ready));
  const pid_t brief = ::fork();
  ASSERT_GE(brief, 0);
  if (brief == 0) {
    auto lock = DriverLock::TryAcquire(home_, "job-1", DriverRole::kKeeper);
    (void)!::write(ready[1], lock ? "y" : "n", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(1, ::read(ready[0], &c, 1));
  ASSERT_EQ('y', c);
  const auto began = std::chrono::steady_clock::now();
  { DriverLock lock = TakeDriverLock(home_, "job-1", DriverRole::kAttachedLaunch); }
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::milliseconds(100));
  ::waitpid(brief, nullptr, 0);

  const pid_t stays = ::fork();
  ASSERT_GE(stays, 0);
  if (stays == 0) {
    auto lock = DriverLock::TryAcquire(home_, "job-1", DriverRole::kKeeper);
    (void)!::write(ready[1], lock ? "y" : "n", 1);
    ::pause();
    ::_exit(0);
  }
  ASSERT_EQ(1, ::read(ready[0], &c, 1));
  ASSERT_EQ('y', c);
  try {
    TakeDriverLock(home_, "job-1", DriverRole::kAttachedLaunch, std::chrono::milliseconds(200));
    ADD_FAILURE() << "two drivers of one job";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("driven by its keeper (pid " + std::to_string(stays)))
        << e.what();
  }
  EXPECT_EQ(stays, DriverHolder(home_, "job-1"));
  ::kill(stays, SIGKILL);
  ::waitpid(stays, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace podrun
