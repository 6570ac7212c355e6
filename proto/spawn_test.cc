// SpawnProcess: a child starts clean whatever its parent's signals, and gets what it asks for.
#include "proto/spawn.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace podrun {
namespace {

// The value of `field` ("SigIgn") in /proc/<pid>/status.
std::string StatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) {
      std::string value = line.substr(field.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "(no " + field + ")";
}

int Reap(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SpawnProcess, ChildHasDefaultDispositionsAndAnEmptyMask) {
  // The parent as the launcher is while it runs an attempt, and worse: SIGINT ignored, SIGTERM
  // and SIGINT blocked, SIGPIPE ignored.
  struct sigaction ignore {
  }, old_int{}, old_pipe{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGPIPE, &ignore, &old_pipe);
  sigset_t blocked, old_mask;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &blocked, &old_mask);
  ASSERT_NE("0000000000000000", StatusField(::getpid(), "SigIgn"));

  const pid_t pid = SpawnProcess({.argv = {"sleep", "30"}});
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);

  // SpawnProcess returns once the child runs sleep: its status is the program's.
  EXPECT_EQ("0000000000000000", StatusField(pid, "SigIgn"));
  EXPECT_EQ("0000000000000000", StatusField(pid, "SigBlk"));
  ::kill(pid, SIGTERM);  // reaches it: not blocked, not ignored
  const int status = Reap(pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(SIGTERM, WTERMSIG(status));
}

TEST(SpawnProcess, StartsADaemonAsTheKeeperIs) {
  // What the keeper needs: a session of its own, stdin from /dev/null, stdout and stderr to a
  // log, a directory and a umask.
  const auto dir =
      std::filesystem::temp_directory_path() / ("spawn_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const int log = ::open((dir / "log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(log, 0);
  const pid_t pid = SpawnProcess(
      {.argv = {"podrun-keeper", "-c",
                "echo out; echo err >&2; pwd; umask; readlink /proc/self/fd/0; "
                "cat /proc/self/stat; read x || echo eof; tr '\\0' ' ' < /proc/$$/cmdline"},
       .program = "/bin/sh",
       .env = std::vector<std::string>{"PATH=/usr/bin:/bin", "ONLY=this"},
       .fds = {{0, kSpawnDevNull}, {1, log}, {2, log}},
       .group = SpawnGroup::kNewSession,
       .cwd = dir.string(),
       .umask = 027});
  ::close(log);
  EXPECT_EQ(0, Reap(pid));
  const std::string text = ReadFile(dir / "log");
  std::istringstream lines(text);
  std::string out, err, cwd, mask, in, stat, eof, cmdline;
  std::getline(lines, out);
  std::getline(lines, err);
  std::getline(lines, cwd);
  std::getline(lines, mask);
  std::getline(lines, in);
  std::getline(lines, stat);
  std::getline(lines, eof);
  std::getline(lines, cmdline);
  EXPECT_EQ("out", out) << text;
  EXPECT_EQ("err", err) << text;
  EXPECT_EQ(std::filesystem::canonical(dir).string(), cwd) << text;
  EXPECT_EQ("0027", mask) << text;
  EXPECT_EQ("/dev/null", in) << text;
  EXPECT_EQ("eof", eof) << text;
  EXPECT_EQ(0u, cmdline.rfind("podrun-keeper -c ", 0)) << text;
  // /proc/self/stat of cat: pid (comm) state ppid pgrp session ...: its session is the shell's,
  // which leads it (the shell's pid).
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string state, ppid, pgrp, session;
  fields >> state >> ppid >> pgrp >> session;
  EXPECT_EQ(std::to_string(pid), session) << stat;
  EXPECT_EQ(std::to_string(pid), pgrp) << stat;
  std::filesystem::remove_all(dir);
}

TEST(SpawnProcess, OnlyTheGivenEnvironmentAndDescriptorsReachTheChild) {
  int leak[2];
  ASSERT_EQ(0, ::pipe(leak));  // no close-on-exec: still closed in the child
  int out[2];
  ASSERT_EQ(0, ::pipe2(out, O_CLOEXEC));
  const pid_t pid = SpawnProcess(
      {.argv = {"/bin/sh", "-c", "echo \"$ONLY:${HOME:-none}\"; ls /proc/self/fd | wc -l"},
       .env = std::vector<std::string>{"ONLY=this"},
       .fds = {{1, out[1]}}});
  ::close(out[1]);
  ::close(leak[0]);
  ::close(leak[1]);
  std::string text;
  char buffer[256];
  for (ssize_t n; (n = ::read(out[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(out[0]);
  EXPECT_EQ(0, Reap(pid));
  // 0 1 2, and ls's own directory descriptor: 4 (the leaked pipe's two ends would make 6).
  EXPECT_EQ("this:none\n4\n", text);
}

TEST(SpawnProcess, FailuresSayWhatAndReapTheChild) {
  try {
    SpawnProcess({.argv = {"podrun-no-such-program"}});
    FAIL() << "no error";
  } catch (const SpawnError& e) {
    EXPECT_STREQ("cannot run podrun-no-such-program: not found on PATH", e.what());
    EXPECT_EQ(127, e.shell_exit_code());
  }
  try {
    SpawnProcess({.argv = {"/bin/true"}, .cwd = "/nonexistent/dir"});
    FAIL() << "no error";
  } catch (const SpawnError& e) {
    EXPECT_STREQ("cannot run /bin/true: chdir /nonexistent/dir: No such file or directory",
                 e.what());
    EXPECT_EQ(126, e.shell_exit_code());
  }
  try {
    SpawnProcess({.argv = {"/nonexistent/program"}});
    FAIL() << "no error";
  } catch (const SpawnError& e) {
    EXPECT_STREQ(
        "cannot run /nonexistent/program: exec /nonexistent/program: No such file or directory",
        e.what());
    EXPECT_EQ(127, e.shell_exit_code());
  }
  errno = 0;
  EXPECT_EQ(-1, ::waitpid(-1, nullptr, WNOHANG));  // nothing left to reap
  EXPECT_EQ(ECHILD, errno);
}

}  // namespace
}  // namespace podrun
