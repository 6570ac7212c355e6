// Tests of the private-state checks both sides use (docs/design.md decision 14).
#include "proto/private_state.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace podrun {
namespace {

class PrivateStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("private-state-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "home");
    ::chmod((root_ / "home").c_str(), 0700);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::filesystem::path root_;
};

TEST_F(PrivateStateTest, PrivateDirectoryOfOursPasses) {
  EXPECT_EQ(std::nullopt, PrivateDirectoryProblem(root_ / "home"));
}

TEST_F(PrivateStateTest, OpenDirectoryIsRefusedWithTheFix) {
  for (mode_t mode : {0755, 0750, 0701, 0707, 0770}) {
    ::chmod((root_ / "home").c_str(), mode);
    std::string problem = PrivateDirectoryProblem(root_ / "home").value_or("");
    EXPECT_NE(std::string::npos, problem.find("chmod 700 " + (root_ / "home").string())) << problem;
  }
  ::chmod((root_ / "home").c_str(), 0755);
  EXPECT_NE(std::string::npos, PrivateDirectoryProblem(root_ / "home").value_or("").find("0755"));
}

TEST_F(PrivateStateTest, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  ASSERT_EQ(0, ::chown((root_ / "home").c_str(), 65534, 65534));
  std::string problem = PrivateDirectoryProblem(root_ / "home").value_or("");
  EXPECT_NE(std::string::npos, problem.find("uid 65534")) << problem;
  EXPECT_NE(std::string::npos, problem.find("not to you")) << problem;
}

TEST_F(PrivateStateTest, MissingOrNotADirectoryIsRefused) {
  EXPECT_NE(std::nullopt, PrivateDirectoryProblem(root_ / "missing"));
  ::close(::creat((root_ / "file").c_str(), 0600));
  EXPECT_NE(std::nullopt, PrivateDirectoryProblem(root_ / "file"));
}

TEST_F(PrivateStateTest, ALinkToAPrivateDirectoryIsFollowedALinkInsideIsRefused) {
  std::filesystem::create_symlink(root_ / "home", root_ / "link");
  EXPECT_EQ(std::nullopt, PrivateDirectoryProblem(root_ / "link"));
  std::filesystem::create_symlink(root_, root_ / "home" / "jobs");
  EXPECT_NE(std::nullopt, SymlinkProblem(root_ / "home" / "jobs"));
  EXPECT_EQ(std::nullopt, SymlinkProblem(root_ / "home" / "absent"));
  EXPECT_EQ(std::nullopt, SymlinkProblem(root_ / "home"));
}

TEST(InheritedUmask, IsTheOneTheProcessWasStartedWith) {
  mode_t before = ::umask(027);
  RestrictUmask();
  EXPECT_EQ(027u, InheritedUmask());
  EXPECT_EQ(077u, ::umask(077));
  ::umask(before);
}

}  // namespace
}  // namespace podrun
