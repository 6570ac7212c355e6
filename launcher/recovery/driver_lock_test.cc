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
    auto lock = DriverLock::TryAcquire(home_, "job-1", "attached launch");
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
  EXPECT_EQ("attached launch", driver->role);
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

}  // namespace
}  // namespace podrun
