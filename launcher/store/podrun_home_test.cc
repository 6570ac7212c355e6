// Tests of where the launcher's state lives: $PODRUN_HOME, $XDG_STATE_HOME, ~/.local/state.
#include "launcher/store/podrun_home.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "launcher/base/error.h"
#include "proto/private_state.h"

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

TEST_F(PodrunHomeTest, ExistingPrivateDirectoryIsKept) {
  std::filesystem::create_directories(root_ / "mine");
  ::chmod((root_ / "mine").c_str(), 0700);
  EXPECT_EQ(root_ / "mine", PodrunHome(Env({{"PODRUN_HOME", (root_ / "mine").string()}})));
  EXPECT_EQ(0700u, Mode(root_ / "mine"));
}

// The error of PodrunHome for `vars`, or "" when it did not throw.
std::string HomeError(const EnvLookup& env) {
  try {
    PodrunHome(env);
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    return e.what();
  }
  return "";
}

TEST_F(PodrunHomeTest, DirectoryOpenToOthersIsRefusedWithTheFix) {
  for (mode_t mode : {0755, 0750, 0701, 0707}) {
    std::filesystem::path dir = root_ / ("open" + std::to_string(mode));
    std::filesystem::create_directories(dir);
    ::chmod(dir.c_str(), mode);
    std::string error = HomeError(Env({{"PODRUN_HOME", dir.string()}}));
    EXPECT_NE(std::string::npos, error.find("chmod 700 " + dir.string())) << error;
    EXPECT_EQ(mode, Mode(dir));  // refused, not silently changed
  }
}

TEST_F(PodrunHomeTest, DirectoryOfAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
  std::filesystem::path dir = root_ / "theirs";
  std::filesystem::create_directories(dir);
  ::chmod(dir.c_str(), 0700);
  ASSERT_EQ(0, ::chown(dir.c_str(), 65534, 65534));
  std::string error = HomeError(Env({{"PODRUN_HOME", dir.string()}}));
  EXPECT_NE(std::string::npos, error.find("uid 65534")) << error;
  EXPECT_NE(std::string::npos, error.find("not to you")) << error;
}

TEST_F(PodrunHomeTest, SymlinksInsideAreRefused) {
  std::filesystem::path home = root_ / "home";
  std::filesystem::create_directories(home);
  ::chmod(home.c_str(), 0700);
  std::filesystem::create_directories(root_ / "elsewhere");
  for (const char* entry : {"podrun.db", "jobs", "podrun.db-wal", "local"}) {
    std::filesystem::create_symlink(root_ / "elsewhere", home / entry);
    std::string error = HomeError(Env({{"PODRUN_HOME", home.string()}}));
    EXPECT_NE(std::string::npos, error.find((home / entry).string() + " is a symbolic link"))
        << error;
    std::filesystem::remove(home / entry);
  }
  EXPECT_EQ("", HomeError(Env({{"PODRUN_HOME", home.string()}})));
}

TEST_F(PodrunHomeTest, HomeItselfMayBeALinkToAPrivateDirectoryOfOurs) {
  std::filesystem::create_directories(root_ / "real");
  ::chmod((root_ / "real").c_str(), 0700);
  std::filesystem::create_symlink(root_ / "real", root_ / "link");
  EXPECT_EQ("", HomeError(Env({{"PODRUN_HOME", (root_ / "link").string()}})));
  ::chmod((root_ / "real").c_str(), 0755);
  EXPECT_NE("", HomeError(Env({{"PODRUN_HOME", (root_ / "link").string()}})));
}

TEST_F(PodrunHomeTest, FileInTheWayIsAnError) {
  std::ofstream(root_ / "file") << "x";
  EXPECT_THROW(PodrunHome(Env({{"PODRUN_HOME", (root_ / "file").string()}})), Error);
}

TEST_F(PodrunHomeTest, JobDir) {
  ::chmod(root_.c_str(), 0700);
  auto dir = JobDir(root_, "20240101-000000-abcd");
  EXPECT_EQ(root_ / "jobs/20240101-000000-abcd", dir);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  EXPECT_EQ(0700u, Mode(root_ / "jobs"));
  EXPECT_EQ(0700u, Mode(dir));
  EXPECT_EQ(dir, JobDir(root_, "20240101-000000-abcd"));  // existing: fine
  EXPECT_THROW(JobDir(root_, "../x"), Error);
  EXPECT_THROW(JobDir(root_, ""), Error);
  std::filesystem::create_directories(root_ / "elsewhere");
  std::filesystem::create_symlink(root_ / "elsewhere", root_ / "jobs" / "linked");
  EXPECT_THROW(JobDir(root_, "linked"), Error);
}

}  // namespace
}  // namespace podrun
