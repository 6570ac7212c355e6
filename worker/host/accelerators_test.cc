// Tests of freeing the accelerators, with stand-in device files in a temporary directory: the
// processes holding them are ended (SIGKILL for one that ignores SIGTERM), an unrelated process
// is left alone, and /tmp/libtpu_lockfile's stand-in is removed only when nobody holds it.
#include "worker/host/accelerators.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

class AcceleratorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "accel.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    for (const char* name : {"accel0", "accel1", "other"}) std::ofstream(dir_ / name) << "";
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  // A child that opens `path` (and flocks it if asked), ignores SIGTERM if asked, and sleeps.
  // With `uid`, the child becomes that user once the file is open.
  pid_t Hold(const std::filesystem::path& path, bool ignore_term, bool lock = false,
             uid_t uid = 0) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (ignore_term) ::signal(SIGTERM, SIG_IGN);
      const int fd = ::open(path.c_str(), O_RDONLY);
      if (lock) ::flock(fd, LOCK_EX);  // as libtpu holds its lockfile
      if (uid != 0 && ::setresuid(uid, uid, uid) != 0) ::_exit(1);
      (void)!::write(ready[1], "x", 1);
      while (true) ::pause();
    }
    char c;
    (void)!::read(ready[0], &c, 1);
    ::close(ready[0]);
    ::close(ready[1]);
    children_.push_back(pid);
    return pid;
  }

  static bool Gone(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 300; ++i) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  static bool Mentions(const std::vector<std::string>& actions, const std::string& text) {
    return std::any_of(actions.begin(), actions.end(),
                       [&](const std::string& a) { return a.find(text) != std::string::npos; });
  }

  std::filesystem::path dir_;
  std::vector<pid_t> children_;
};

TEST_F(AcceleratorsTest, EndsTheHoldersOfTheChipsAndNothingElse) {
  const pid_t polite = Hold(dir_ / "accel0", /*ignore_term=*/false);
  const pid_t stubborn = Hold(dir_ / "accel1", /*ignore_term=*/true);
  const pid_t unrelated = Hold(dir_ / "other", /*ignore_term=*/false);
  const auto actions =
      FreeAccelerators({(dir_ / "accel*").string()}, dir_ / "libtpu_lockfile", 300ms);
  EXPECT_TRUE(Gone(polite));
  EXPECT_TRUE(Gone(stubborn));
  EXPECT_EQ(::kill(unrelated, 0), 0);
  EXPECT_TRUE(Mentions(actions, "ended pid " + std::to_string(polite))) << actions.size();
  EXPECT_TRUE(Mentions(actions, "killed pid " + std::to_string(stubborn)));
  EXPECT_TRUE(Mentions(actions, (dir_ / "accel1").string()));
  EXPECT_EQ(actions.size(), 2u);  // no lockfile: nothing said of it
}

TEST_F(AcceleratorsTest, TheChipsThatGivenProcessesHold) {
  const pid_t a = Hold(dir_ / "accel1", /*ignore_term=*/false);
  const pid_t b = Hold(dir_ / "accel0", /*ignore_term=*/false);
  const pid_t c = Hold(dir_ / "accel0", /*ignore_term=*/false);
  const pid_t other = Hold(dir_ / "other", /*ignore_term=*/false);
  const std::vector<std::string> patterns = {(dir_ / "accel*").string()};
  EXPECT_EQ(AcceleratorsHeldBy(patterns, {a, b, c, other}),
            (std::vector<std::string>{(dir_ / "accel0").string(), (dir_ / "accel1").string()}));
  EXPECT_EQ(AcceleratorsHeldBy(patterns, {a}),
            (std::vector<std::string>{(dir_ / "accel1").string()}));
  EXPECT_TRUE(AcceleratorsHeldBy(patterns, {other}).empty());
  EXPECT_TRUE(AcceleratorsHeldBy({(dir_ / "none*").string()}, {a, b}).empty());
  EXPECT_EQ(::kill(a, 0), 0);  // only looked at
}

TEST_F(AcceleratorsTest, RemovesOnlyAStaleLockfile) {
  const auto lockfile = dir_ / "libtpu_lockfile";
  std::ofstream(lockfile) << "";
  auto actions = FreeAccelerators({(dir_ / "accel*").string()}, lockfile, 300ms);
  EXPECT_FALSE(std::filesystem::exists(lockfile));
  EXPECT_TRUE(Mentions(actions, "removed a stale " + lockfile.string()));

  // Held open by a live process: left in place, the holder named.
  std::ofstream(lockfile) << "";
  const pid_t holder = Hold(lockfile, /*ignore_term=*/false, /*lock=*/true);
  actions = FreeAccelerators({(dir_ / "accel*").string()}, lockfile, 300ms);
  EXPECT_TRUE(std::filesystem::exists(lockfile));
  EXPECT_TRUE(Mentions(actions, "pid " + std::to_string(holder))) << actions.front();
  EXPECT_EQ(::kill(holder, 0), 0);  // a holder of the lockfile alone is not ended
}

// A holder of another user is named and left, unless all users are asked for (doctor --fix
// --all-users); the agent's own user's holder is ended either way.
TEST_F(AcceleratorsTest, AnotherUsersHolderIsLeftUnlessAllUsersAreAsked) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a process as another user";
  constexpr uid_t kNobody = 65534;
  const pid_t theirs = Hold(dir_ / "accel0", /*ignore_term=*/false, /*lock=*/false, kNobody);
  const pid_t ours = Hold(dir_ / "accel1", /*ignore_term=*/false);
  const std::vector<std::string> patterns = {(dir_ / "accel*").string()};
  auto actions = FreeAccelerators(patterns, dir_ / "libtpu_lockfile", 300ms);
  EXPECT_TRUE(Gone(ours));
  EXPECT_EQ(::kill(theirs, 0), 0);
  EXPECT_TRUE(Mentions(actions, "left pid " + std::to_string(theirs))) << actions.front();
  EXPECT_TRUE(Mentions(actions, "uid 65534"));
  EXPECT_TRUE(Mentions(actions, "--all-users"));

  actions = FreeAccelerators(patterns, dir_ / "libtpu_lockfile", 300ms, /*all_users=*/true);
  EXPECT_TRUE(Gone(theirs));
  EXPECT_TRUE(Mentions(actions, "ended pid " + std::to_string(theirs)));
}

}  // namespace
}  // namespace podrun::agent
