// Tests of where the launcher's state lives: $PODRUN_HOME, $XDG_STATE_HOME, ~/.local/state.
#include "launcher/job/podrun_home.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "launcher/error.h"

namespace podrun {
namespace {

class PodrunHomeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("podrun-home-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  EnvLookup Env(const std::map<std::string, std::string>& vars) {
    return [vars](const std::string& name) -> std::optional<std::string> {
      auto it = vars.find(name);
      if (it == vars.end()) return std::nullopt;
      return it->second;
    };
  }

  static unsigned Mode(const std::filesystem::path& p) {
    struct stat st {};
    EXPECT_EQ(0, ::stat(p.c_str(), &st));
    return st.st_mode & 0777;
  }

  std::filesystem::path root_;
};

TEST_F(PodrunHomeTest, PodrunHomeWins) {
  auto home = PodrunHome(Env({{"PODRUN_HOME", (root_ / "a/b").string()},
                              {"XDG_STATE_HOME", (root_ / "xdg").string()},
                              {"HOME", (root_ / "home").string()}}));
  EXPECT_EQ(root_ / "a/b", home);
  EXPECT_TRUE(std::filesystem::is_directory(home));
  EXPECT_EQ(0700u, Mode(home));
}

TEST_F(PodrunHomeTest, XdgStateHomeThenHome) {
  EXPECT_EQ(root_ / "xdg/podrun", PodrunHome(Env({{"PODRUN_HOME", ""},
                                                  {"XDG_STATE_HOME", (root_ / "xdg").string()},
                                                  {"HOME", (root_ / "home").string()}})));
  // A relative XDG_STATE_HOME is ignored, as the XDG spec says.
  EXPECT_EQ(root_ / "home/.local/state/podrun",
            PodrunHome(Env({{"XDG_STATE_HOME", "rel"}, {"HOME", (root_ / "home").string()}})));
  EXPECT_EQ(0700u, Mode(root_ / "home/.local/state/podrun"));
}

TEST_F(PodrunHomeTest, ExistingDirectoryIsKept) {
  std::filesystem::create_directories(root_ / "mine");
  ::chmod((root_ / "mine").c_str(), 0755);
  EXPECT_EQ(root_ / "mine", PodrunHome(Env({{"PODRUN_HOME", (root_ / "mine").string()}})));
  EXPECT_EQ(0755u, Mode(root_ / "mine"));
}

TEST_F(PodrunHomeTest, FileInTheWayIsAnError) {
  std::ofstream(root_ / "file") << "x";
  EXPECT_THROW(PodrunHome(Env({{"PODRUN_HOME", (root_ / "file").string()}})), Error);
}

TEST_F(PodrunHomeTest, JobDir) {
  auto dir = JobDir(root_, "20240101-000000-abcd");
  EXPECT_EQ(root_ / "jobs/20240101-000000-abcd", dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(dir, JobDir(root_, "20240101-000000-abcd"));  // existing: fine
  EXPECT_THROW(JobDir(root_, "../x"), Error);
  EXPECT_THROW(JobDir(root_, ""), Error);
}

}  // namespace
}  // namespace podrun
