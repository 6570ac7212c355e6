// Tests of the keeper that need no pod: a job recorded with a relative spec path (by an older
// podrun) is refused by the keeper and by `podrun watch`, never resolved against the keeper's
// folder (/), and the keeper records why it ended.
#include "launcher/recovery/keeper.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "launcher/commands/watch_command.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::temp_directory_path() /
            ("podrun-keeper-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(home_);
    std::filesystem::create_directories(home_);
    std::filesystem::permissions(home_, std::filesystem::perms::owner_all);
    ::setenv("PODRUN_HOME", home_.c_str(), 1);
    cwd_ = std::filesystem::current_path();
  }
  void TearDown() override {
    std::filesystem::current_path(cwd_);
    ::unsetenv("PODRUN_HOME");
    std::filesystem::remove_all(home_);
  }
  // A job an older podrun launched from some folder, its spec path recorded as typed, whose
  // attempt runs.
  JobRecord OldJob(JobStore& store) {
    JobRecord job;
    job.name = "train";
    job.pod = "local:1";
    job.spec_text = "sync: .\nrun: python train.py\n";
    job.spec_path = "train.yaml";
    job = store.CreateJob(job);
    store.AddAttempt(job.id, {0}, AttemptReason::kLaunch);
    return job;
  }
  std::filesystem::path home_, cwd_;
};

TEST_F(KeeperTest, AnOldRelativeSpecPathIsNeverResolvedInTheKeepersFolder) {
  JobStore store(home_ / "podrun.db");
  const JobRecord job = OldJob(store);
  std::filesystem::current_path("/");  // where a keeper runs
  std::optional<Keeper> keeper = Keeper::Acquire(home_, job.id);
  ASSERT_TRUE(keeper);
  try {
    keeper->Run(store, job);
    ADD_FAILURE() << "the keeper took a relative spec path";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("podrun rerun " + job.id)) << e.what();
  }
  EXPECT_EQ("train.yaml", store.GetJob(job.id).spec_path);  // not "/train.yaml"
  keeper.reset();
  // `podrun watch` says it at once rather than start a keeper that ends so.
  try {
    RunWatch({.job = job.id, .foreground = false});
    ADD_FAILURE() << "watch started a keeper for a relative spec path";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
  }
  EXPECT_FALSE(DriverHolder(home_, job.id));
  EXPECT_EQ("train.yaml", store.GetJob(job.id).spec_path);
}

}  // namespace
}  // namespace podrun
