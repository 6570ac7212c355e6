// Tests of the recorded spec: read from the store whatever the current folder, its sync:
// directory gone or not; an old store's relative path resolved once and recorded, or refused
// where it must not be resolved (a keeper).
#include "launcher/store/recorded_spec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "launcher/base/error.h"

namespace podrun {
namespace {

class RecordedSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("podrun-recorded-spec-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "elsewhere");
    cwd_ = std::filesystem::current_path();
  }
  void TearDown() override {
    std::filesystem::current_path(cwd_);
    std::filesystem::remove_all(dir_);
  }
  JobRecord Job(JobStore& store, const std::string& spec_path) {
    JobRecord job;
    job.name = "train";
    job.pod = "local:1";
    job.spec_text = "sync: code\nrun: python train.py\n";
    job.spec_path = spec_path;
    return store.CreateJob(job);
  }
  std::filesystem::path dir_, cwd_;
};

TEST_F(RecordedSpecTest, AnAbsolutePathIsReadAsRecordedFromAnyFolderWithItsTreeGone) {
  JobStore store(dir_ / "podrun.db");
  JobRecord job = Job(store, "/launch/folder/train.yaml");
  std::filesystem::current_path(dir_ / "elsewhere");
  const JobSpec spec = RecordedSpec(store, job);  // /launch/folder/code does not exist here
  EXPECT_EQ("/launch/folder/code", SyncDirectory(spec).string());
  EXPECT_EQ("/launch/folder/train.yaml", store.GetJob(job.id).spec_path);
}

TEST_F(RecordedSpecTest, AnOldStoresRelativePathIsResolvedOnceAndRecorded) {
  JobStore store(dir_ / "podrun.db");
  JobRecord job = Job(store, "train.yaml");
  std::filesystem::current_path(dir_);
  const JobSpec spec = RecordedSpec(store, job);
  const std::string resolved = (std::filesystem::canonical(dir_) / "train.yaml").string();
  EXPECT_EQ((std::filesystem::canonical(dir_) / "code").string(), SyncDirectory(spec).string());
  EXPECT_EQ(resolved, job.spec_path);
  // Recorded: read from another folder later, it stays where it was resolved.
  std::filesystem::current_path(dir_ / "elsewhere");
  JobRecord again = store.GetJob(job.id);
  EXPECT_EQ(resolved, again.spec_path);
  EXPECT_EQ((std::filesystem::canonical(dir_) / "code").string(),
            SyncDirectory(RecordedSpec(store, again)).string());
}

// A keeper's folder is /: it never resolves an old relative path (sync: . would be the whole
// filesystem); it says to rerun from the launch's folder, and the store keeps the path as it was.
TEST_F(RecordedSpecTest, ARelativePathIsRefusedWhereItMustNotBeResolved) {
  JobStore store(dir_ / "podrun.db");
  const JobRecord job = Job(store, "train.yaml");
  try {
    RefuseRelativeSpecPath(job);
    ADD_FAILURE() << "a relative spec path was taken";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos,
              std::string(e.what()).find("run `podrun rerun " + job.id + "` in that folder"))
        << e.what();
  }
  EXPECT_EQ("train.yaml", store.GetJob(job.id).spec_path);
  EXPECT_NO_THROW(RefuseRelativeSpecPath(Job(store, "/launch/folder/train.yaml")));
}

}  // namespace
}  // namespace podrun
