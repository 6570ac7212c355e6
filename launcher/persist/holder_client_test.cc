// Finding or starting the holder: its directory and socket private, nothing foreign followed or
// taken, a stale socket replaced. `/bin/true` stands in for the holder: it takes the socket and
// exits at once, leaving the socket stale, as a holder killed with SIGKILL does.
#include "launcher/persist/holder_client.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace podrun {
namespace {

namespace fs = std::filesystem;

class HolderClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::path(::testing::TempDir()) /
            ("holder-client-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override { fs::remove_all(home_); }

  static struct stat Lstat(const fs::path& path) {
    struct stat st {};
    EXPECT_EQ(0, ::lstat(path.c_str(), &st)) << path;
    return st;
  }

  fs::path home_;
};

TEST_F(HolderClientTest, DirectoryAndSocketArePrivate) {
  std::string why;
  ASSERT_TRUE(HolderClient::Reach(home_, &why, "/bin/true")) << why;
  const HolderPaths paths = HolderPathsIn(home_);
  const struct stat dir = Lstat(paths.dir);
  EXPECT_TRUE(S_ISDIR(dir.st_mode));
  EXPECT_EQ(0700u, dir.st_mode & 0777);
  EXPECT_EQ(::geteuid(), dir.st_uid);
  const struct stat socket = Lstat(paths.socket);
  EXPECT_TRUE(S_ISSOCK(socket.st_mode));
  EXPECT_EQ(0u, socket.st_mode & 077);
  EXPECT_EQ(::geteuid(), socket.st_uid);
  // Only the socket, the lock and the log: nothing else, nothing secret.
  for (const auto& entry : fs::directory_iterator(paths.dir)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "holder.sock" || name == "holder.lock" || name == "holder.log") << name;
    EXPECT_EQ(0u, Lstat(entry.path()).st_mode & 077) << name;
  }
}

TEST_F(HolderClientTest, StaleSocketIsReplaced) {
  ASSERT_TRUE(HolderClient::Reach(home_, nullptr, "/bin/true"));
  const HolderPaths paths = HolderPathsIn(home_);
  // A second name keeps the stale socket's inode from being reused by its replacement.
  const fs::path old_name = home_ / "old.sock";
  fs::create_hard_link(paths.socket, old_name);
  const ino_t first = Lstat(paths.socket).st_ino;
  // Nobody listens on it any more (its holder is gone): the next command starts another, with
  // the socket it bound as descriptor 3.
  const fs::path fake = home_ / "fake-holder";
  const fs::path started = home_ / "started";
  std::ofstream(fake) << "#!/bin/sh\necho \"$@\" >> " << started.string() << "\n";
  fs::permissions(fake, fs::perms::owner_all);
  std::string why;
  ASSERT_TRUE(HolderClient::Reach(home_, &why, fake.string())) << why;
  EXPECT_NE(first, Lstat(paths.socket).st_ino);
  EXPECT_TRUE(S_ISSOCK(Lstat(paths.socket).st_mode));
  std::ifstream in(started);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ("__holder --fd 3", line);
}

TEST_F(HolderClientTest, DirectoryOpenToOthersIsRefused) {
  const HolderPaths paths = HolderPathsIn(home_);
  fs::create_directory(paths.dir);
  ::chmod(paths.dir.c_str(), 0755);
  std::string why;
  EXPECT_FALSE(HolderClient::Reach(home_, &why, "/bin/true"));
  EXPECT_NE(std::string::npos, why.find("open to others")) << why;
  EXPECT_FALSE(fs::exists(paths.socket));
}

TEST_F(HolderClientTest, SymbolicLinkIsNeverFollowed) {
  const fs::path elsewhere = home_ / "elsewhere";
  fs::create_directory(elsewhere);
  ::chmod(elsewhere.c_str(), 0700);
  const HolderPaths paths = HolderPathsIn(home_);
  fs::create_directory_symlink(elsewhere, paths.dir);
  std::string why;
  EXPECT_FALSE(HolderClient::Reach(home_, &why, "/bin/true"));
  EXPECT_NE(std::string::npos, why.find("not a directory")) << why;
  EXPECT_TRUE(fs::is_empty(elsewhere));
  // A link where the socket goes is not replaced either.
  fs::remove(paths.dir);
  fs::create_directory(paths.dir);
  ::chmod(paths.dir.c_str(), 0700);
  fs::create_symlink(elsewhere / "target", paths.socket);
  EXPECT_FALSE(HolderClient::Reach(home_, &why, "/bin/true"));
  EXPECT_TRUE(fs::is_symlink(paths.socket));
  EXPECT_TRUE(fs::is_empty(elsewhere));
}

TEST_F(HolderClientTest, FileWhereTheSocketGoesIsLeftAlone) {
  const HolderPaths paths = HolderPathsIn(home_);
  fs::create_directory(paths.dir);
  ::chmod(paths.dir.c_str(), 0700);
  std::ofstream(paths.socket) << "mine";
  std::string why;
  EXPECT_FALSE(HolderClient::Reach(home_, &why, "/bin/true"));
  EXPECT_NE(std::string::npos, why.find("not a socket")) << why;
  EXPECT_TRUE(fs::is_regular_file(paths.socket));
}

TEST(PersistSettings, FlagAndVariables) {
  ::unsetenv("PODRUN_PERSIST");
  EXPECT_TRUE(PersistWanted(false));
  EXPECT_FALSE(PersistWanted(true));
  ::setenv("PODRUN_PERSIST", "0", 1);
  EXPECT_FALSE(PersistWanted(false));
  ::setenv("PODRUN_PERSIST", "1", 1);
  EXPECT_TRUE(PersistWanted(false));
  ::unsetenv("PODRUN_PERSIST");
  ::unsetenv("PODRUN_PERSIST_SECONDS");
  EXPECT_EQ(std::chrono::seconds(600), PersistSeconds());
  ::setenv("PODRUN_PERSIST_SECONDS", "5", 1);
  EXPECT_EQ(std::chrono::seconds(5), PersistSeconds());
  ::setenv("PODRUN_PERSIST_SECONDS", "five", 1);
  EXPECT_EQ(std::chrono::seconds(600), PersistSeconds());
  ::setenv("PODRUN_PERSIST_SECONDS", "0", 1);
  EXPECT_EQ(std::chrono::seconds(600), PersistSeconds());
  ::unsetenv("PODRUN_PERSIST_SECONDS");
}

}  // namespace
}  // namespace podrun
