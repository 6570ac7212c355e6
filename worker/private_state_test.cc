// Tests of the agent's private state checks (DESIGN.md decision 14).
#include "worker/private_state.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

namespace podrun::agent {
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

  static std::string ErrorOf(const std::filesystem::path& dir) {
    try {
      CheckPrivateDirectory(dir);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path root_;
};

TEST_F(PrivateStateTest, PrivateDirectoryOfOursPasses) { EXPECT_EQ("", ErrorOf(root_ / "home")); }

TEST_F(PrivateStateTest, OpenDirectoryIsRefusedWithTheFix) {
  ::chmod((root_ / "home").c_str(), 0755);
  std::string error = ErrorOf(root_ / "home");
  EXPECT_NE(std::string::npos, error.find("chmod 700 " + (root_ / "home").string())) << error;
  EXPECT_NE(std::string::npos, error.find("0755")) << error;
}

TEST_F(PrivateStateTest, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  ASSERT_EQ(0, ::chown((root_ / "home").c_str(), 65534, 65534));
  EXPECT_NE(std::string::npos, ErrorOf(root_ / "home").find("uid 65534"));
}

TEST_F(PrivateStateTest, NotADirectoryIsRefused) { EXPECT_NE("", ErrorOf(root_ / "missing")); }

TEST_F(PrivateStateTest, SymlinksAreRefused) {
  std::filesystem::create_symlink(root_, root_ / "home" / "jobs");
  EXPECT_THROW(RefuseSymlink(root_ / "home" / "jobs"), std::runtime_error);
  EXPECT_NO_THROW(RefuseSymlink(root_ / "home" / "absent"));
  EXPECT_NO_THROW(RefuseSymlink(root_ / "home"));
}

TEST(JobUmask, IsTheOneTheAgentWasStartedWith) {
  mode_t before = ::umask(027);
  RestrictUmask();
  EXPECT_EQ(027u, JobUmask());
  EXPECT_EQ(077u, ::umask(077));
  ::umask(before);
}

}  // namespace
}  // namespace podrun::agent
