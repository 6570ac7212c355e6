#include "worker/jobdir/job_retention.h"

#include <gtest/gtest.h>

#include <fstream>

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;

TEST(JobRetention, RemovesOnlyFinishedAttemptsOlderThanTheLimit) {
  fs::path home = fs::path(::testing::TempDir()) / "podrun-retention-home";
  fs::remove_all(home);
  auto attempt = [&](const std::string& job, int n, bool finished) {
    fs::path dir = home / "jobs" / job / std::to_string(n);
    fs::create_directories(dir);
    std::ofstream(dir / "log") << "x";
    if (finished) std::ofstream(dir / "exit_status") << "exit_code 0\n";
    return dir;
  };
  fs::path old_done = attempt("old", 1, true);
  fs::path old_running = attempt("old", 2, false);
  fs::path new_done = attempt("new", 1, true);
  fs::path gone_job = attempt("gone", 1, true);
  auto long_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 30);
  fs::last_write_time(old_done / "exit_status", long_ago);
  fs::last_write_time(gone_job / "exit_status", long_ago);

  EXPECT_EQ(0, PruneFinishedJobs(home, std::chrono::hours(0)));  // 0 keeps everything
  EXPECT_EQ(2, PruneFinishedJobs(home, std::chrono::hours(24 * 14)));
  EXPECT_FALSE(fs::exists(old_done));
  EXPECT_TRUE(fs::exists(old_running));  // no exit status: never touched
  EXPECT_TRUE(fs::exists(new_done));
  EXPECT_FALSE(fs::exists(home / "jobs" / "gone"));  // left empty: removed
  fs::remove_all(home);
}

TEST(JobRetention, RemovesOnlyTheSocketsOfGoneSupervisors) {
  const auto home = std::filesystem::path(::testing::TempDir()) /
                    ("retention-sockets-" + std::to_string(::getpid()));
  std::filesystem::create_directories(home / "run");
  // pid 1 is alive but no supervisor; a pid beyond pid_max is nobody.
  for (const char* name : {"sup-1.sock", "sup-99999999.sock", "agent.sock", "sup-x.sock"}) {
    std::ofstream(home / "run" / name) << "";
  }
  EXPECT_EQ(RemoveStaleSupervisorSockets(home), 2);
  EXPECT_FALSE(std::filesystem::exists(home / "run" / "sup-1.sock"));
  EXPECT_FALSE(std::filesystem::exists(home / "run" / "sup-99999999.sock"));
  EXPECT_TRUE(std::filesystem::exists(home / "run" / "agent.sock"));
  EXPECT_TRUE(std::filesystem::exists(home / "run" / "sup-x.sock"));
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace podrun::agent
