// Tests of the job shell's first line (ShellPreamble): it says it is ready, runs nothing of the
// job before GO, closes both descriptors before the job's run, and reports "never started" on
// end-of-file; and of the command line `why` shows without it.
#include "worker/supervisor/prepared_child.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

// bash -c PREAMBLE\nRUN with the go socket and the ran pipe at fds 5 and 6.
struct Shell {
  explicit Shell(const std::string& run) {
    int go[2], ran[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go), 0);
    EXPECT_EQ(::pipe2(ran, O_CLOEXEC), 0);
    const std::string script = ShellPreamble(5, 6) + "\n" + run;
    pid = ::fork();
    if (pid == 0) {
      // Out of the way first (either may be 5 or 6 already), then in place, inheritable.
      const int g = ::fcntl(go[1], F_DUPFD_CLOEXEC, 100), r = ::fcntl(ran[1], F_DUPFD_CLOEXEC, 100);
      ::dup2(g, 5);
      ::dup2(r, 6);
      ::execl("/bin/bash", "bash", "-c", script.c_str(), nullptr);
      ::_exit(127);
    }
    ::close(go[1]);
    ::close(ran[1]);
    sock = go[0];
    ran_read = ran[0];
  }
  ~Shell() {
    if (sock >= 0) ::close(sock);
    ::close(ran_read);
    if (pid > 0) ::waitpid(pid, nullptr, 0);
  }
  int Wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  pid_t pid = 0;
  int sock = -1, ran_read = -1;
};

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ShellPreambleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "preamble.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ShellPreambleTest, ReadyThenNothingBeforeGoThenTheRunWithoutItsDescriptors) {
  const std::filesystem::path out = dir_ / "out";
  Shell shell(
      "if [ -e /proc/$$/fd/5 ] || [ -e /proc/$$/fd/6 ]; then echo open; else echo closed; "
      "fi > " +
      out.string());
  ChildReport ready{kNotStarted, 1};
  ASSERT_TRUE(ReadReport(shell.sock, &ready));
  EXPECT_EQ(ready.step, kReady);
  EXPECT_EQ(ready.err, 0);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(std::filesystem::exists(out));
  const char go = 1;
  ASSERT_EQ(::write(shell.sock, &go, 1), 1);
  ChildReport none;
  EXPECT_FALSE(ReadReport(shell.sock, &none));      // end-of-file: the shell closed it
  EXPECT_FALSE(ReadReport(shell.ran_read, &none));  // and the ran pipe, with no report
  EXPECT_EQ(shell.Wait(), 0);
  EXPECT_EQ(ReadText(out), "closed\n");
}

TEST_F(ShellPreambleTest, EndOfFileInsteadOfGoRunsNothingAndSaysNeverStarted) {
  const std::filesystem::path out = dir_ / "out";
  Shell shell("echo ran > " + out.string());
  ChildReport ready;
  ASSERT_TRUE(ReadReport(shell.sock, &ready));
  ::close(shell.sock);
  shell.sock = -1;
  ChildReport report;
  ASSERT_TRUE(ReadReport(shell.ran_read, &report));
  EXPECT_EQ(report.step, kNotStarted);
  EXPECT_EQ(shell.Wait(), 0);
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ShellPreamble, WhyShowsTheJobsShellAsItWasStarted) {
  const std::string started = std::string("/bin/bash\0-lc\0", 14);
  const std::string cmdline = started + ShellPreamble(4, 9) + "\npython3 train.py" + '\0';
  EXPECT_EQ(WithoutShellPreamble(cmdline), started + "python3 train.py" + '\0');
  const std::string other("python3\0-c\0print(1)\0", 20);
  EXPECT_EQ(WithoutShellPreamble(other), other);
  EXPECT_LT(ShellPreamble(INT_MAX, INT_MAX).size(), kShellPreambleMaxBytes);
}

}  // namespace
}  // namespace podrun::agent
