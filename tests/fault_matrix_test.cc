// The fault matrix of docs/reliability.md ("Not yet shown" until now), each a real fault on one
// real 3-worker testpod (pod id 27): a worker rebooted mid-job (every process killed, a new boot
// id; it is lost, the gang stops, `rerun` succeeds); the launcher SIGSTOPped for longer than
// every bound it keeps, then continued (nothing lost); sshd restarted on a worker mid-job (the
// stream reconnects, nothing lost); the launcher's own disk full (named; the job runs to its end
// on the workers); two `logs -f` on one job at once (each gets every line once); the job store
// locked by another process (a command waits, then succeeds; past its bound, a clear error); the
// launcher SIGKILLed between two workers' Start (the started worker stops its job unconfirmed,
// `logs -f` names the workers that never started, `status` and `ls` read why). Processes are
// counted inside the pod only; time bounds are generous (two loaded cores).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kWorkers = 3;
constexpr int kPodId = 27;

std::string Tmp(const std::string& name) { return ::testing::TempDir() + "/fault-matrix-" + name; }
std::string Home() { return Tmp("home"); }
std::string Podrun(const std::string& home = Home()) {
  return "env PODRUN_HOME=" + home + " " + std::string(PODRUN_BINARY);
}

std::string WriteSpec(const std::string& name, const std::string& text) {
  const std::string path = Tmp(name + ".yaml");
  std::ofstream(path) << "name: " << name << "\n" << text;
  return path;
}

std::string JobIdOf(const std::string& output) {
  std::smatch m;
  return std::regex_search(output, m, std::regex("job: ([0-9a-f-]+)")) ? m[1].str() : "";
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Each worker K printed "line 1" .. "line <lines[K]>" exactly once, in order ("[wK] line N").
void ExpectEveryLineOnce(const std::string& text, const std::map<int, int>& lines) {
  std::map<int, int> last;
  std::istringstream in(text);
  const std::regex line_re(R"(\[w(\d)\] line (\d+))");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    const int w = std::stoi(m[1]), n = std::stoi(m[2]);
    ASSERT_EQ(last[w] + 1, n) << "worker " << w;
    last[w] = n;
  }
  for (const auto& [w, n] : lines) EXPECT_EQ(n, last[w]) << "worker " << w;
}

// A job that prints "line 1", "line 2", ... on every worker for `seconds` seconds, then
// "total N": as many lines as its time allowed, checked with TotalLines.
std::string TimedLinesRun(int seconds) {
  return "run: |\n  end=$((SECONDS + " + std::to_string(seconds) +
         ")); i=0\n  while [ $SECONDS -lt $end ]; do i=$((i + 1)); echo \"line $i\"; "
         "sleep 0.02; done\n  echo \"total $i\"\n";
}
std::map<int, int> TotalLines(const std::string& text) {
  std::map<int, int> totals;
  const std::regex total_re(R"(\[w(\d)\] total (\d+))");
  for (std::sregex_iterator it(text.begin(), text.end(), total_re), end; it != end; ++it) {
    totals[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  }
  return totals;
}

class FaultMatrixTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Home());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static std::string Options() {
    return " --hosts @" + pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " +
           pod_->known_hosts();
  }
  // Starts `podrun launch SPEC` in the background (its own pid), stdout and stderr into files.
  static pid_t StartLaunch(const std::string& spec, const std::string& out, const std::string& err,
                           const std::string& home = Home(), const std::string& env = "") {
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return StartCommand("env " + env + " " + Podrun(home) + " launch " + spec + Options() + " > " +
                        out + " 2> " + err);
  }
  // The exit status of `pid` (as waitpid gives it), or -1 if it did not end within `limit`.
  static int WaitForExit(pid_t pid, std::chrono::seconds limit) {
    int status = -1;
    if (!WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, limit)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return -1;
    }
    return status;
  }
  static int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
  static bool NoneLeft(const std::string& marker) {
    return WaitUntil([&] { return pod_->CountProcesses(marker) == 0; }, 30s);
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> FaultMatrixTest::pod_;

TEST_F(FaultMatrixTest, AWorkerRebootedMidJobIsLostTheGangStopsAndRerunSucceeds) {
  const std::string marker = "podrun-reboot-marker-" + std::to_string(::getpid());
  const std::string spec = WriteSpec(
      "reboot", "grace_seconds: 2\nrun: |\n  if [ $PODRUN_ATTEMPT = 1 ]; then echo up; exec -a " +
                    marker +
                    " sleep 600; fi\n  echo \"attempt $PODRUN_ATTEMPT boot "
                    "$(cat /proc/sys/kernel/random/boot_id)\"\n");
  const std::string out = Tmp("reboot.out"), err = Tmp("reboot.err");
  const pid_t launcher = StartLaunch(spec, out, err);
  ASSERT_TRUE(WaitUntil([&] { return pod_->CountProcesses(marker) == kWorkers; }, 60s))
      << ReadTextFile(err);
  const std::string old_boot = pod_->Exec(1, "cat /proc/sys/kernel/random/boot_id").output;
  const auto rebooted_at = Clock::now();
  pod_->Reboot(1);
  const int status = WaitForExit(launcher, 120s);
  const double took = SecondsSince(rebooted_at);
  const std::string messages = ReadTextFile(err);
  EXPECT_EQ(1, ExitCode(status)) << messages;
  // Lost within the launcher's bound (an agent without progress for 20 s), plus slack for a
  // loaded machine (here the new agent says so at once: about a second).
  EXPECT_LT(took, 30) << messages;
  std::cerr << "w1 rebooted: the launch ended " << took << " s later\n";
  // The root cause is w1, lost; the others were stopped because of it, and nothing is left.
  EXPECT_TRUE(
      std::regex_search(messages, std::regex("failed: w1 \\(" + pod_->hosts()[1] + "\\): lost: ")))
      << messages;
  EXPECT_TRUE(NoneLeft(marker)) << messages;
  const std::string new_boot = pod_->Exec(1, "cat /proc/sys/kernel/random/boot_id").output;
  EXPECT_NE(old_boot, new_boot);

  const std::string job = JobIdOf(ReadTextFile(out));
  ASSERT_FALSE(job.empty());
  CommandResult rerun = RunCommand(Podrun() + " rerun " + job);
  ASSERT_EQ(0, rerun.exit_code) << rerun.output;
  EXPECT_NE(std::string::npos, rerun.output.find("[w1] attempt 2 boot " + new_boot))
      << rerun.output;
  for (int i : {0, 2}) {
    EXPECT_NE(std::string::npos, rerun.output.find("[w" + std::to_string(i) + "] attempt 2 boot"))
        << rerun.output;
  }
}

TEST_F(FaultMatrixTest, ALauncherStoppedLongerThanItsBoundsThenContinuedLosesNothing) {
  // Stopped for 25 s: longer than every bound the launcher keeps while it follows a job: an
  // agent without progress is lost after 20 s; SSH keepalives (made 2 s here) give up after 3
  // unanswered, 6 s; the spec's stall_seconds is 5. A 60 s stop would show nothing more.
  constexpr auto kStopped = 25s;
  const std::string spec = WriteSpec("stopped", "stall_seconds: 5\n" + TimedLinesRun(32));
  const std::string out = Tmp("stopped.out"), err = Tmp("stopped.err");
  const pid_t launcher = StartLaunch(spec, out, err, Home(), "PODRUN_SSH_KEEPALIVE_SECONDS=2");
  ASSERT_NE(std::string::npos, WaitForText(out, "[w2] line 20\n", 60s).find("[w2] line 20\n"))
      << ReadTextFile(err);
  ASSERT_EQ(0, ::kill(launcher, SIGSTOP));
  std::this_thread::sleep_for(kStopped);
  ASSERT_EQ(0, ::kill(launcher, SIGCONT));
  const int status = WaitForExit(launcher, 120s);
  const std::string text = ReadTextFile(out), messages = ReadTextFile(err);
  EXPECT_EQ(0, ExitCode(status)) << messages;
  const std::map<int, int> totals = TotalLines(text);
  ASSERT_EQ(static_cast<size_t>(kWorkers), totals.size()) << messages;
  ExpectEveryLineOnce(text, totals);
  EXPECT_EQ(std::string::npos, messages.find("hung")) << messages;
  EXPECT_EQ(std::string::npos, messages.find("lost")) << messages;
}

TEST_F(FaultMatrixTest, SshdRestartedOnAWorkerMidJobTheStreamReconnectsAndLosesNothing) {
  constexpr int kLines = 3000;
  const std::string spec =
      WriteSpec("sshd-restart", "run: |\n  for i in $(seq 1 " + std::to_string(kLines) +
                                    "); do echo \"line $i\"; [ $((i % 100)) = 0 ] && sleep 0.1; "
                                    "done; exit 0\n");
  const std::string out = Tmp("sshd-restart.out"), err = Tmp("sshd-restart.err");
  const pid_t launcher = StartLaunch(spec, out, err);
  ASSERT_NE(std::string::npos, WaitForText(out, "[w1] line 500\n", 60s).find("[w1] line 500\n"))
      << ReadTextFile(err);
  pod_->RestartSshd(1);
  const int status = WaitForExit(launcher, 120s);
  const std::string text = ReadTextFile(out), messages = ReadTextFile(err);
  EXPECT_EQ(0, ExitCode(status)) << messages;
  EXPECT_NE(std::string::npos, messages.find("w1 (" + pod_->hosts()[1] + "): reconnected"))
      << messages;
  ExpectEveryLineOnce(text, {{0, kLines}, {1, kLines}, {2, kLines}});
}

TEST_F(FaultMatrixTest, TheLaunchersFullDiskIsNamedAndTheJobRunsToItsEndOnTheWorkers) {
  // PODRUN_HOME on a 4 MB tmpfs, filled up once the job runs.
  const std::string home = Tmp("small-home");
  RunCommand("umount -l " + home + " 2>/dev/null; rm -rf " + home + "; mkdir -p " + home);
  ASSERT_EQ(0, RunCommand("mount -t tmpfs -o size=4m,mode=0700 tmpfs " + home).exit_code);
  struct Unmount {
    std::string path;
    ~Unmount() { RunCommand("umount -l " + path); }
  } unmount{home};
  // About 8 KB per worker after the fill: more than the slack in the last page of each file.
  const std::string spec = WriteSpec(
      "full-home",
      "run: |\n  for i in $(seq 1 40); do echo \"line $i $(printf %0200d 0)\"; sleep 0.1; done\n"
      "  echo ended > ~/fault-matrix-ended-$PODRUN_JOB_ID\n");
  const std::string out = Tmp("full-home.out"), err = Tmp("full-home.err");
  const pid_t launcher = StartLaunch(spec, out, err, home);
  const std::string started = WaitForText(out, "[w0] line 3 ", 60s);
  const std::string job = JobIdOf(started);
  ASSERT_FALSE(job.empty()) << ReadTextFile(err);
  RunCommand("dd if=/dev/zero of=" + home + "/filler bs=64k 2>/dev/null");
  ASSERT_EQ("0\n", RunCommand("df --output=avail " + home + " | tail -1 | tr -d ' '").output);
  const int status = WaitForExit(launcher, 120s);
  const std::string messages = ReadTextFile(err);
  EXPECT_EQ(0, ExitCode(status)) << messages;  // the job succeeded
  // Named: the launcher's copy of the log under the full filesystem, and the cause (the job
  // store's failed writes are warnings too). What the launcher prints lacks nothing.
  EXPECT_NE(std::string::npos,
            messages.find("the launcher's copy of the log (" + home + "/jobs/" + job + "/1/"))
      << messages;
  EXPECT_NE(std::string::npos, messages.find(") is incomplete: No space left on device"))
      << messages;
  const std::string text = ReadTextFile(out);
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(std::string::npos, text.find("[w" + std::to_string(i) + "] line 40 ")) << text;
  }
  // The job ran to its end on every worker.
  const std::string ended = "/root/fault-matrix-ended-" + job;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_TRUE(WaitUntil([&] { return pod_->Exec(i, "test -f " + ended).exit_code == 0; }, 60s))
        << "w" << i << "\n"
        << messages;
  }
}

TEST_F(FaultMatrixTest, TwoFollowersOfOneJobEachGetEveryLineOnceInOrder) {
  constexpr int kLines = 2000;
  const std::string spec =
      WriteSpec("two-followers", "run: |\n  for i in $(seq 1 " + std::to_string(kLines) +
                                     "); do echo \"line $i\"; [ $((i % 100)) = 0 ] && sleep 0.2; "
                                     "done; exit 0\n");
  CommandResult launch = RunCommand(Podrun() + " launch -d " + spec + Options(), false);
  ASSERT_EQ(0, launch.exit_code) << launch.output;
  const std::string job = JobIdOf(launch.output);
  ASSERT_FALSE(job.empty()) << launch.output;
  const std::string out[2] = {Tmp("follower-0.out"), Tmp("follower-1.out")};
  pid_t followers[2];
  for (int f = 0; f < 2; ++f) {
    followers[f] =
        StartCommand(Podrun() + " logs " + job + " -f > " + out[f] + " 2> " + out[f] + ".err");
  }
  for (int f = 0; f < 2; ++f) {
    const int status = WaitForExit(followers[f], 120s);
    EXPECT_EQ(0, ExitCode(status)) << ReadTextFile(out[f] + ".err");
    SCOPED_TRACE("follower " + std::to_string(f));
    ExpectEveryLineOnce(ReadTextFile(out[f]), {{0, kLines}, {1, kLines}, {2, kLines}});
  }
  // They ended with the job: every worker's process has exited.
  CommandResult st = RunCommand(Podrun() + " status " + job + " --json");
  const std::regex exited(R"("state":"exited")");
  EXPECT_EQ(3, std::distance(std::sregex_iterator(st.output.begin(), st.output.end(), exited),
                             std::sregex_iterator()))
      << st.output;
}

TEST_F(FaultMatrixTest, ALockedJobStoreMakesACommandWaitThenSucceedOrFailNamingTheLock) {
  ASSERT_EQ(0, RunCommand(Podrun() + " ls").exit_code);  // the store exists
  const std::string db = Home() + "/podrun.db";
  // Another process holds the store's write lock for `seconds` (BEGIN EXCLUSIVE), as a podrun
  // in the middle of a write would.
  auto hold = [&](int seconds, const std::string& ready) {
    std::filesystem::remove(ready);
    return StartCommand(
        "python3 -c 'import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute(\"BEGIN EXCLUSIVE\")\n"
        "open(sys.argv[3], \"w\").write(\"locked\")\n"
        "time.sleep(float(sys.argv[2]))\n"
        "c.execute(\"COMMIT\")' " +
        db + " " + std::to_string(seconds) + " " + ready);
  };
  // Held for 4 s: `ls` waits, then succeeds.
  const std::string ready = Tmp("lock-ready");
  pid_t holder = hold(4, ready);
  ASSERT_NE("", WaitForText(ready, "locked", 30s));
  auto began = Clock::now();
  CommandResult waited = RunCommand(Podrun() + " ls");
  const double waited_s = SecondsSince(began);
  EXPECT_EQ(0, waited.exit_code) << waited.output;
  EXPECT_GE(waited_s, 2.0) << waited.output;
  EXPECT_EQ(0, ExitCode(WaitForExit(holder, 30s)));
  // Held for longer than the store's busy timeout (10 s): a clear error naming the store.
  holder = hold(60, ready);
  ASSERT_NE("", WaitForText(ready, "locked", 30s));
  began = Clock::now();
  CommandResult refused = RunCommand(Podrun() + " ls");
  const double refused_s = SecondsSince(began);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  EXPECT_EQ(1, refused.exit_code) << refused.output;
  EXPECT_NE(std::string::npos, refused.output.find(db)) << refused.output;
  EXPECT_NE(std::string::npos, refused.output.find("database is locked (another process, e.g. "
                                                   "another podrun, holds the job store's lock"))
      << refused.output;
  EXPECT_GE(refused_s, 5.0) << refused.output;
  EXPECT_LT(refused_s, 40.0) << refused.output;
  std::cerr << "ls waited " << waited_s << " s for a 4 s lock; gave up after " << refused_s
            << " s\n";
  EXPECT_EQ(0, RunCommand(Podrun() + " ls").exit_code);  // released: usable again
}

TEST_F(FaultMatrixTest, ALauncherKilledBetweenTwoWorkersStartsLeavesNoGangRunningInPart) {
  // The launcher sends Start to w0 only, then stalls (its test hook) and is SIGKILLed there: w0
  // runs alone, w1 and w2 stay prepared. w0's agent stops the job once no confirmation came;
  // `logs -f` shows what w0 printed, names w1 and w2 as never started, and ends with exit 1;
  // `status` and `ls` read the reason. Today's podrun leaves w0 running for its 10 minutes.
  const std::string marker = "podrun-partial-" + std::to_string(::getpid());
  const std::string home = Tmp("partial-home");
  RunCommand("rm -rf " + home);
  const std::string spec = WriteSpec("partial",
                                     "grace_seconds: 2\nrun: |\n"
                                     "  echo \"w$PODRUN_WORKER_ID started\"\n"
                                     "  exec -a " +
                                         marker + "-$PODRUN_WORKER_ID sleep 600\n");
  const std::string out = Tmp("partial.out"), err = Tmp("partial.err");
  const pid_t launcher =
      StartLaunch(spec, out, err, home,
                  "PODRUN_TEST_STALL_AFTER_STARTS=1 PODRUN_TEST_START_CONFIRM_SLACK_MS=4000");
  ASSERT_NE(std::string::npos, WaitForText(err, "test hook: stalled after 1 start", 120s)
                                   .find("test hook: stalled after 1 start"))
      << ReadTextFile(err);
  const std::string job = JobIdOf(ReadTextFile(out));
  ASSERT_FALSE(job.empty()) << ReadTextFile(out) << ReadTextFile(err);
  // A partial gang: w0's program runs, the others' never started.
  EXPECT_TRUE(WaitUntil([&] { return pod_->CountProcesses(marker + "-0") == 1; }, 30s))
      << ReadTextFile(err);
  EXPECT_EQ(0, pod_->CountProcesses(marker + "-[12]"));
  ASSERT_EQ(0, ::kill(launcher, SIGKILL));
  ::waitpid(launcher, nullptr, 0);

  // Followed from another terminal while w0 still runs: it ends by itself once w0's agent
  // stopped the job (bounded here only so that a regression fails instead of hanging).
  const std::string logs_out = Tmp("partial-logs.out"), logs_err = Tmp("partial-logs.err");
  std::filesystem::remove(logs_out);
  std::filesystem::remove(logs_err);
  const pid_t logs = StartCommand("timeout 180 " + Podrun(home) + " logs " + job + " -f > " +
                                  logs_out + " 2> " + logs_err);
  const int logs_status = WaitForExit(logs, 200s);
  const std::string printed = ReadTextFile(logs_out), said = ReadTextFile(logs_err);
  EXPECT_EQ(1, ExitCode(logs_status)) << printed << said;
  EXPECT_NE(std::string::npos, printed.find("[w0] w0 started\n")) << printed << said;
  EXPECT_EQ(std::string::npos, printed.find("[w1]")) << printed;
  EXPECT_NE(std::string::npos, said.find("[w0] podrun-agent: the start was never confirmed"))
      << said;
  for (int w : {1, 2}) {
    EXPECT_TRUE(std::regex_search(
        said, std::regex("(^|\n)podrun: w" + std::to_string(w) +
                         " \\([^)]*\\): never started: the launcher was lost while starting")))
        << said;
  }
  EXPECT_TRUE(NoneLeft(marker)) << "w0's program still runs";

  const CommandResult status = RunCommand(Podrun(home) + " status " + job);
  EXPECT_EQ(0, status.exit_code) << status.output;
  EXPECT_TRUE(std::regex_search(status.output, std::regex("attempt 1: failed"))) << status.output;
  EXPECT_TRUE(std::regex_search(
      status.output,
      std::regex("\nw0\\s+\\S+\\s+failed\\s.*the start was never confirmed: the launcher was "
                 "lost while starting the gang")))
      << status.output;
  for (int w : {1, 2}) {
    EXPECT_TRUE(std::regex_search(status.output,
                                  std::regex("\nw" + std::to_string(w) +
                                             "\\s+\\S+\\s+stopped\\s.*never started: the launcher "
                                             "was lost while starting the gang")))
        << status.output;
  }
  EXPECT_NE(std::string::npos, status.output.find("cause: the start was never confirmed"))
      << status.output;
  const CommandResult ls = RunCommand(Podrun(home) + " ls");
  EXPECT_TRUE(std::regex_search(ls.output, std::regex(job + "[^\n]* failed "))) << ls.output;
}

}  // namespace
}  // namespace podrun::testing
