// Integration tests of the bounded output path (docs/reference.md, Output; docs/design.md decision 12)
// on a real 2-worker testpod: a huge line without a newline through exec and launch, and a
// '\r' progress bar seen in podrun's output file while it runs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 2;
constexpr int kPodId = 14;
constexpr size_t kPieceBytes = 64 << 10;
constexpr uint64_t kLineBytes = 200'000'000;  // per worker, without a newline
constexpr long kMaxLauncherRssKb = 100 << 10;
// Each worker prints this pattern, repeated, with no newline at all.
constexpr std::string_view kPattern = "abcdefghij";

std::string Home() { return ::testing::TempDir() + "/podrun-output-test-home"; }

// What a run printed, checked as it streamed through (nothing of it kept in memory).
struct StreamCheck {
  std::map<int, uint64_t> bytes;  // per worker: text bytes with the labels removed
  std::string error;              // the first thing that was wrong, if any
  int exit_code = -1;
  long max_rss_kb = 0;  // podrun's peak resident memory
};

// Runs `command` (podrun, exec'd by the shell) with stdout into a pipe read here: each line
// must be "[wK] " + at most 64 KiB of kPattern continuing where worker K's text left off.
StreamCheck RunAndCheck(const std::string& command) {
  StreamCheck check;
  int fds[2];
  if (::pipe(fds) != 0) {
    check.error = "pipe";
    return check;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
    _exit(127);
  }
  ::close(fds[1]);
  std::string line;
  char buf[1 << 16];
  auto check_line = [&](const std::string& l) {
    if (!check.error.empty()) return;
    if (l.rfind("job: ", 0) == 0) return;
    if (l.size() < 5 || l[0] != '[' || l[1] != 'w' || l[3] != ']' || l[4] != ' ') {
      check.error = "unlabelled line: " + l.substr(0, 80);
      return;
    }
    int w = l[2] - '0';
    std::string_view text(l);
    text.remove_prefix(5);
    if (text.size() > kPieceBytes) check.error = "a line longer than 64 KiB";
    uint64_t& at = check.bytes[w];
    for (char c : text) {
      if (c != kPattern[at % kPattern.size()]) {
        check.error = "w" + std::to_string(w) + ": wrong byte at " + std::to_string(at);
        return;
      }
      ++at;
    }
  };
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        check_line(line);
        line.clear();
      } else {
        line += buf[i];
        if (line.size() > kPieceBytes + 100) {
          check.error = "a line longer than 64 KiB";
          line.clear();
        }
      }
    }
  }
  if (!line.empty()) check.error = "output does not end with a newline";
  ::close(fds[0]);
  int status = 0;
  rusage usage{};
  ::wait4(pid, &status, 0, &usage);
  check.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  check.max_rss_kb = usage.ru_maxrss;
  return check;
}

// The worker command: kLineBytes of kPattern, no newline.
std::string HugeLineCommand() {
  return "yes " + std::string(kPattern) + " | tr -d '\\n' | head -c " + std::to_string(kLineBytes);
}

class OutputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Home());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static std::string Podrun() { return "env PODRUN_HOME=" + Home() + " " + PODRUN_BINARY; }
  static std::string PodOptions() {
    return " --hosts @" + pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " +
           pod_->known_hosts();
  }
  static std::string WriteSpec(const std::string& name, const std::string& run) {
    std::string path = ::testing::TempDir() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\nrun: |\n  " << run << "\n";
    return path;
  }

  // Bytes this host has received from the pod's bridge so far (what the workers sent it).
  static uint64_t BytesFromWorkers() {
    std::ifstream in("/sys/class/net/prbr" + std::to_string(pod_->id()) + "/statistics/rx_bytes");
    uint64_t bytes = 0;
    in >> bytes;
    return bytes;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> OutputTest::pod_;

void ExpectEveryByteBounded(const StreamCheck& check) {
  EXPECT_EQ(0, check.exit_code);
  EXPECT_EQ("", check.error);
  for (int w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(kLineBytes, check.bytes.count(w) ? check.bytes.at(w) : 0) << "w" << w;
  }
  EXPECT_GT(check.max_rss_kb, 0);
  std::cout << "podrun's peak resident memory: " << check.max_rss_kb / 1024 << " MiB\n";
#ifndef PODRUN_SANITIZED  // ASan's shadow memory and quarantine are not podrun's
  EXPECT_LT(check.max_rss_kb, kMaxLauncherRssKb) << "podrun's peak memory in KiB";
#endif
}

TEST_F(OutputTest, HugeLineWithoutNewlineThroughExecArrivesWholeInBoundedMemory) {
  const uint64_t received = BytesFromWorkers();
  StreamCheck check = RunAndCheck(Podrun() + " exec" + PodOptions() + " -- " +
                                  ShellQuote(HugeLineCommand()) + " 2>/dev/null");
  ExpectEveryByteBounded(check);
  // exec's output comes as it is: every byte crosses the link (the counter sees it).
  EXPECT_GE(BytesFromWorkers() - received, kWorkers * kLineBytes);
}

TEST_F(OutputTest, HugeLineWithoutNewlineThroughLaunchArrivesWholeInBoundedMemory) {
  std::string spec = WriteSpec("huge-line", HugeLineCommand());
  const uint64_t received = BytesFromWorkers();
  StreamCheck check = RunAndCheck(Podrun() + " launch " + spec + PodOptions() + " 2>" +
                                  ::testing::TempDir() + "/huge-line.err");
  ExpectEveryByteBounded(check);
  // stream-log compresses what compresses (LZ4 batches): a repeated pattern crosses the link
  // in a small fraction of its size.
  const uint64_t sent = BytesFromWorkers() - received;
  std::cout << "bytes from the workers for " << kWorkers * kLineBytes << " of output: " << sent
            << "\n";
  EXPECT_LT(sent, kWorkers * kLineBytes / 20);
  if (check.exit_code != 0) ADD_FAILURE() << ReadTextFile(::testing::TempDir() + "/huge-line.err");
}

TEST_F(OutputTest, ProgressBarVisibleInOutputFileWhileItRuns) {
  std::string out = ::testing::TempDir() + "/progress.out";
  std::string command = "for i in $(seq 1 30); do printf '\\rstep %d' $i; sleep 0.3; done; echo";
  pid_t pid = StartCommand(Podrun() + " exec" + PodOptions() + " -w 0 -- " + ShellQuote(command) +
                           " >" + out + " 2>/dev/null");
  // A state shows up in the file long before the bar's line ends (after about 9 s).
  std::string seen = WaitForText(out, "[w0] step ", std::chrono::seconds(8));
  int status = 0;
  bool running = ::waitpid(pid, &status, WNOHANG) == 0;
  EXPECT_TRUE(running) << "podrun ended before a state was seen";
  EXPECT_NE(std::string::npos, seen.find("[w0] step ")) << seen;
  if (running) ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::string all = ReadTextFile(out);
  EXPECT_NE(std::string::npos, all.find("[w0] step 30\n")) << all;  // the final text
  // Into a file: at most one state per 5 s (9 s of bar: 2, maybe 3 on a slow machine) + final.
  EXPECT_LE(std::count(all.begin(), all.end(), '\n'), 4) << all;
  EXPECT_EQ(std::string::npos, all.find('\r')) << all;
}

}  // namespace
}  // namespace podrun::testing
