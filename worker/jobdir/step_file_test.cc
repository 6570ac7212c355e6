#include "worker/jobdir/step_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace podrun::agent {
namespace {

class StepFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = std::filesystem::path(::testing::TempDir()) /
            ("podrun-stepfile-" + std::to_string(::getpid()));
    std::filesystem::remove_all(home_);
    dir_.emplace(home_, "job", 1);
    dir_->Create();
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  static v1::StepRecord Record(int64_t step) {
    v1::StepRecord r;
    r.set_has_step(true);
    r.set_step(step);
    r.set_step_ns(step * 10);
    return r;
  }

  std::filesystem::path home_;
  std::optional<JobDir> dir_;
};

TEST_F(StepFileTest, WrittenPrivateAndReadBack) {
  EXPECT_FALSE(ReadStepFile(*dir_));
  WriteStepFile(*dir_, Record(7));
  WriteStepFile(*dir_, Record(8));
  auto read = ReadStepFile(*dir_);
  ASSERT_TRUE(read);
  EXPECT_EQ(8, read->step());
  struct stat st {};
  ASSERT_EQ(0, ::stat(StepFilePath(*dir_).c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  // No scratch file is left behind.
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_->path())) files += !!e.exists();
  EXPECT_EQ(1, files);
}

TEST_F(StepFileTest, NoSymlinkIsFollowed) {
  const std::filesystem::path target = home_ / "target";
  std::ofstream(target) << "theirs";
  // A link planted where the record goes is replaced, not written through, and never read.
  std::filesystem::create_symlink(target, StepFilePath(*dir_));
  EXPECT_FALSE(ReadStepFile(*dir_));
  // (The scratch file is never opened through a link: proto/atomic_write_test.cc.)
  WriteStepFile(*dir_, Record(3));
  EXPECT_FALSE(std::filesystem::is_symlink(StepFilePath(*dir_)));
  std::ifstream in(target);
  std::string theirs;
  in >> theirs;
  EXPECT_EQ("theirs", theirs);
  ASSERT_TRUE(ReadStepFile(*dir_));
  EXPECT_EQ(3, ReadStepFile(*dir_)->step());
}

}  // namespace
}  // namespace podrun::agent
