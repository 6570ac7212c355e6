// Integration tests of faults on a worker during `podrun launch`, on a real 3-worker testpod
// (docs/design.md decisions 10 and 12): the agent SIGKILLed mid-run (the job goes on, the launch
// succeeds, every line arrives once), the agent and the job's supervisor both SIGKILLed (the
// worker is lost within a bounded time and the gang is stopped), and a worker whose ~/.podrun
// is a small tmpfs that fills up (every line still reaches the attached launcher, the full disk
// is reported naming the worker, the exit status is right), also when it is nearly full from the
// start and the job prints more than the supervisor may hold in memory (issue 23).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
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

constexpr int kWorkers = 3;
constexpr int kPodId = 16;

std::string Home() { return ::testing::TempDir() + "/podrun-agent-fault-test-home"; }
std::string Podrun() { return "env PODRUN_HOME=" + Home() + " " + std::string(PODRUN_BINARY); }

// A tmpfs size for ~/.podrun that holds the agent (12 MB; a sanitized build's is larger) with
// `spare_kib` to spare, as "<KiB>k".
std::string TmpfsSizeForAgent(uintmax_t spare_kib) {
  return std::to_string(std::filesystem::file_size(PODRUN_AGENT) / 1024 + spare_kib) + "k";
}

std::string WriteSpec(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

// The highest peak resident memory (VmHWM, KiB) among the processes whose command line holds
// every one of `words` (the workers share this machine's PID namespace), at least `so_far`.
long PeakMemoryKib(const std::vector<std::string>& words, long so_far) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadTextFile("/proc/" + pid + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (!std::all_of(words.begin(), words.end(),
                     [&](const std::string& w) { return cmdline.find(w) != std::string::npos; })) {
      continue;
    }
    std::istringstream status(ReadTextFile("/proc/" + pid + "/status"));
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmHWM:")) so_far = std::max(so_far, std::stol(line.substr(6)));
    }
  }
  return so_far;
}

// Each worker printed "line 1" .. "line <lines[w]>" exactly once, in order, as "[wK] line N"
// (each line may go on with " xxx...", a padding).
void ExpectEveryLineOnce(const std::string& text, const std::map<int, int>& lines) {
  std::map<int, int> last;
  std::istringstream in(text);
  const std::regex line_re(R"(\[w(\d)\] line (\d+)(?: x+)?)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) continue;
    const int w = std::stoi(m[1]), n = std::stoi(m[2]);
    ASSERT_EQ(last[w] + 1, n) << "worker " << w;
    last[w] = n;
  }
  for (const auto& [w, n] : lines) EXPECT_EQ(last[w], n) << "worker " << w;
}

class AgentFaultTest : public ::testing::Test {
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
  // Starts `podrun launch SPEC` in the background, stdout and stderr into files.
  static pid_t StartLaunch(const std::string& spec, const std::string& out,
                           const std::string& err) {
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return StartCommand(Podrun() + " launch " + spec + Options() + " > " + out + " 2> " + err);
  }
  // The process id of worker i's agent (its socket's listener in the worker's network).
  static std::string AgentPid(int i) {
    return pod_
        ->Exec(i,
               "ss -lxpH | grep -F /.podrun/run/agent.sock | grep -o 'pid=[0-9]*' | "
               "head -1 | cut -d= -f2 | tr -d '\\n'")
        .output;
  }
  // The process ids of worker i's job supervisors (named by their sockets), space-separated.
  static std::string SupervisorPids(int i) {
    return pod_
        ->Exec(i,
               "ls /root/.podrun/run | sed -n 's/^sup-\\([0-9]*\\)\\.sock$/\\1/p' | "
               "tr '\\n' ' '")
        .output;
  }
  // Ends w1's agent and puts w1's ~/.podrun on a tmpfs with `spare_kib` beside the agent (the
  // workers share one PID namespace: only w1's own agent is ended). Returns the exit code.
  static int PutWorker1HomeOnASmallTmpfs(uintmax_t spare_kib = 4096) {
    if (const std::string agent = AgentPid(1); !agent.empty()) pod_->Exec(1, "kill -9 " + agent);
    return pod_
        ->Exec(1, "rm -rf /root/.podrun && mkdir -m 700 /root/.podrun && mount -t tmpfs -o size=" +
                      TmpfsSizeForAgent(spare_kib) + ",mode=0700 tmpfs /root/.podrun")
        .exit_code;
  }
  // Undoes PutWorker1HomeOnASmallTmpfs (its agent ended first).
  static void RestoreWorker1Home() {
    if (const std::string agent = AgentPid(1); !agent.empty()) pod_->Exec(1, "kill -9 " + agent);
    pod_->Exec(1, "umount -l /root/.podrun");
  }
  static int WaitForExit(pid_t pid, std::chrono::seconds limit) {
    int status = -1;
    WaitUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, limit);
    return status;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> AgentFaultTest::pod_;

TEST_F(AgentFaultTest, AnAgentKilledMidRunLosesNothingAndTheLaunchSucceeds) {
  constexpr int kLines = 3000;
  const std::string spec = WriteSpec(
      "agent-killed", "name: agent-killed\nrun: |\n  for i in $(seq 1 " + std::to_string(kLines) +
                          "); do echo \"line $i\"; [ $((i % 100)) = 0 ] && sleep 0.1; done; "
                          "exit 0\n");
  const std::string out = ::testing::TempDir() + "/agent-killed.out";
  const std::string err = ::testing::TempDir() + "/agent-killed.err";
  const pid_t launcher = StartLaunch(spec, out, err);
  WaitForText(out, "[w1] line 500\n");
  const std::string agent = AgentPid(1);
  ASSERT_FALSE(agent.empty());
  ASSERT_EQ(0, pod_->Exec(1, "kill -9 " + agent).exit_code);
  const int status = WaitForExit(launcher, 120s);
  const std::string text = ReadTextFile(out), messages = ReadTextFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << messages;
  EXPECT_EQ(0, WEXITSTATUS(status)) << messages;
  ExpectEveryLineOnce(text, {{0, kLines}, {1, kLines}, {2, kLines}});
  // A new agent serves w1 now, and status shows every worker's real exit.
  EXPECT_NE(AgentPid(1), agent);
  CommandResult st = RunCommand(Podrun() + " status agent-killed --json");
  ASSERT_EQ(0, st.exit_code) << st.output;
  const std::regex exited(R"("exit_code":0,[^}]*"state":"exited")");
  EXPECT_EQ(3, std::distance(std::sregex_iterator(st.output.begin(), st.output.end(), exited),
                             std::sregex_iterator()))
      << st.output;
  // No worker lost, nor a note that says so.
  EXPECT_EQ(std::string::npos, st.output.find("\"lost\"")) << st.output;
  EXPECT_EQ(std::string::npos, st.output.find("lost:")) << st.output;
}

TEST_F(AgentFaultTest, AgentAndSupervisorKilledTheWorkerIsLostAndTheGangStops) {
  const std::string marker = "podrun-fault-marker-" + std::to_string(::getpid());
  const std::string spec = WriteSpec("both-killed",
                                     "name: both-killed\ngrace_seconds: 2\nrun: |\n  echo up\n"
                                     "  exec -a " +
                                         marker + " sleep 600\n");
  const std::string out = ::testing::TempDir() + "/both-killed.out";
  const std::string err = ::testing::TempDir() + "/both-killed.err";
  const pid_t launcher = StartLaunch(spec, out, err);
  ASSERT_TRUE(WaitUntil([&] { return pod_->CountProcesses(marker) == kWorkers; }, 60s));
  const std::string agent = AgentPid(2), supervisors = SupervisorPids(2);
  ASSERT_FALSE(agent.empty());
  ASSERT_FALSE(supervisors.empty());
  const auto killed_at = std::chrono::steady_clock::now();
  ASSERT_EQ(0, pod_->Exec(2, "kill -9 " + agent + " " + supervisors).exit_code);
  const int status = WaitForExit(launcher, 120s);
  const auto took = std::chrono::steady_clock::now() - killed_at;
  const std::string messages = ReadTextFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << messages;
  EXPECT_EQ(1, WEXITSTATUS(status)) << messages;
  EXPECT_LT(took, 60s) << messages;
  EXPECT_NE(std::string::npos, messages.find("w2")) << messages;
  EXPECT_NE(std::string::npos, messages.find("lost")) << messages;
  // The gang was stopped: no job process remains anywhere (w2's own was ended as lost).
  EXPECT_EQ(0, [&] {
    WaitUntil([&] { return pod_->CountProcesses(marker) == 0; }, 30s);
    return pod_->CountProcesses(marker);
  }());
  CommandResult st = RunCommand(Podrun() + " status both-killed");
  EXPECT_NE(std::string::npos, st.output.find("lost")) << st.output;
}

TEST_F(AgentFaultTest, AFullDiskOnAWorkerLosesNoLineAndIsReported) {
  // w1's ~/.podrun is a tmpfs with 4 MiB beside the agent: the job's log fills it.
  ASSERT_EQ(0, PutWorker1HomeOnASmallTmpfs());
  constexpr int kLines = 1500000;  // about 20 MB on w1; the others print little
  const std::string spec = WriteSpec(
      "full-disk", "name: full-disk\nrun: |\n  if [ $PODRUN_WORKER_ID = 1 ]; then seq 1 " +
                       std::to_string(kLines) +
                       " | sed 's/^/line /'; exit 7; fi\n  seq 1 10 | sed 's/^/line /'\n");
  const std::string out = ::testing::TempDir() + "/full-disk.out";
  const std::string err = ::testing::TempDir() + "/full-disk.err";
  const pid_t launcher = StartLaunch(spec, out, err);
  const int status = WaitForExit(launcher, 300s);
  const std::string messages = ReadTextFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << messages;
  EXPECT_EQ(1, WEXITSTATUS(status)) << messages;  // w1 exited 7: the job failed
  ExpectEveryLineOnce(ReadTextFile(out), {{0, 10}, {1, kLines}, {2, 10}});
  // The full disk is named with the worker and its cause.
  const std::regex gap_re("w1 \\([^)]*\\).*(No space left on device)");
  EXPECT_TRUE(std::regex_search(messages, gap_re)) << messages;
  CommandResult st = RunCommand(Podrun() + " status full-disk");
  EXPECT_NE(std::string::npos, st.output.find("No space left on device")) << st.output;
  CommandResult json = RunCommand(Podrun() + " status full-disk --json");
  EXPECT_TRUE(std::regex_search(json.output, std::regex(R"("exit_code":7,[^}]*"state":"failed")")))
      << json.output;
  // `logs` names it too (what the disk kept is the log's own copy, with a gap marker).
  CommandResult logs = RunCommand(Podrun() + " logs full-disk -w 1");
  EXPECT_NE(std::string::npos, logs.output.find("w1 (")) << logs.output.substr(0, 2000);
  EXPECT_NE(std::string::npos, logs.output.find("log gap")) << logs.output.substr(0, 2000);
  RestoreWorker1Home();
}

TEST_F(AgentFaultTest, ADiskNearlyFullFromTheStartStillStreamsEveryLineLiveAndTheEnd) {
  // As a new user tried it: w1's ~/.podrun on a tmpfs that is nearly full once the agent is there
  // (about 12 MiB in all), a job printing 20 MB in lines of 100 bytes. The disk is full before
  // the log's first megabyte: nearly all of it is a gap on disk, and must still reach the
  // attached launcher, live, in order, once each, followed by the end.
  ASSERT_EQ(0, PutWorker1HomeOnASmallTmpfs(/*spare_kib=*/512));
  struct Restore {
    ~Restore() { RestoreWorker1Home(); }
  } restore;
  constexpr int kLines = 202000;
  const std::string spec =
      WriteSpec("nearly-full",
                "name: nearly-full\nrun: |\n  if [ $PODRUN_WORKER_ID = 1 ]; then\n"
                "    awk 'BEGIN { p = sprintf(\"%88s\", \"\"); gsub(/ /, \"x\", p);"
                " for (i = 1; i <= " +
                    std::to_string(kLines) +
                    "; i++) printf \"line %d %s\\n\", i, p }'\n"
                    "    exit 0\n  fi\n  seq 1 10 | sed 's/^/line /'\n");
  const std::string out = ::testing::TempDir() + "/nearly-full.out";
  const std::string err = ::testing::TempDir() + "/nearly-full.err";
  const auto began = std::chrono::steady_clock::now();
  const pid_t launcher = StartLaunch(spec, out, err);
  // While it runs: the peak memory of the job's supervisors and of the agents' log streams.
  const std::string job_line = WaitForText(out, "\n");
  const std::string job = job_line.substr(0, job_line.find('\n')).substr(job_line.find(' ') + 1);
  long supervisor_kib = 0, stream_kib = 0;
  int status = -1;
  bool ended = false;
  while (!ended && std::chrono::steady_clock::now() - began < 180s) {
    ended = ::waitpid(launcher, &status, WNOHANG) == launcher;
    supervisor_kib = PeakMemoryKib({"supervise", "--job " + job}, supervisor_kib);
    stream_kib = PeakMemoryKib({"stream-log", "--job " + job}, stream_kib);
    std::this_thread::sleep_for(100ms);
  }
  const auto took = std::chrono::steady_clock::now() - began;
  if (!ended) {
    ::kill(launcher, SIGKILL);
    WaitForExit(launcher, 10s);
    status = -1;
  }
  const std::string text = ReadTextFile(out), messages = ReadTextFile(err);
  std::printf("launch took %.1f s; peak memory: supervisor %ld KiB, stream-log %ld KiB\n",
              std::chrono::duration<double>(took).count(), supervisor_kib, stream_kib);
  ASSERT_TRUE(WIFEXITED(status)) << "the launch did not end; stderr:\n" << messages;
  EXPECT_EQ(0, WEXITSTATUS(status)) << messages;  // every worker's job exited 0
  EXPECT_LT(took, 120s) << messages;
  // Every one of w1's lines, in order, once: "line 1" first, "line 202000" last.
  ExpectEveryLineOnce(text, {{0, 10}, {1, kLines}, {2, 10}});
  const size_t first = text.find("[w1] line "), last = text.rfind("[w1] line ");
  ASSERT_NE(std::string::npos, first);
  EXPECT_EQ(0u, text.compare(first, 13, "[w1] line 1 x"));
  EXPECT_EQ(0u, text.compare(last, 18, "[w1] line 202000 x"));
  // The gap is reported, with the worker and its cause, by the launch and by status.
  EXPECT_TRUE(std::regex_search(messages, std::regex("w1 \\([^)]*\\).*log gap.*"
                                                     "No space left on device")))
      << messages;
  CommandResult st = RunCommand(Podrun() + " status nearly-full");
  EXPECT_NE(std::string::npos, st.output.find("No space left on device")) << st.output;
  CommandResult json = RunCommand(Podrun() + " status nearly-full --json");
  EXPECT_TRUE(std::regex_search(json.output, std::regex(R"("exit_code":0,[^}]*"state":"exited")")))
      << json.output;
  // Memory stayed bounded: the 20 MB went through, never all of it held (16 MiB held at most by
  // the supervisor, a few MiB in flight in the log stream, beside the agent's own ~10 MB).
  EXPECT_GT(supervisor_kib, 0);
  EXPECT_GT(stream_kib, 0);
#ifndef PODRUN_SANITIZED  // ASan's shadow memory and quarantine are not podrun's
  EXPECT_LT(supervisor_kib, 48 * 1024);
  EXPECT_LT(stream_kib, 48 * 1024);
#endif
}

TEST_F(AgentFaultTest, ADiskFullBeforeTheStartRefusesTheJobAtOnceAndLeavesNothing) {
  // w1's ~/.podrun is a tmpfs with 4 MiB beside the agent: a first launch installs it there, then a
  // file fills what is left, so the next job's directory cannot be written.
  ASSERT_EQ(0, PutWorker1HomeOnASmallTmpfs());
  const std::string marker = "podrun-full-before-marker-" + std::to_string(::getpid());
  const std::string warm = WriteSpec("warm", "name: warm\nrun: echo warm\n");
  ASSERT_EQ(0, WaitForExit(StartLaunch(warm, ::testing::TempDir() + "/warm.out",
                                       ::testing::TempDir() + "/warm.err"),
                           120s))
      << ReadTextFile(::testing::TempDir() + "/warm.err");
  pod_->Exec(1, "dd if=/dev/zero of=/root/.podrun/filler bs=64k 2>/dev/null; sync");
  const std::string spec =
      WriteSpec("full-before", "name: full-before\nrun: |\n  exec -a " + marker + " sleep 600\n");
  const std::string out = ::testing::TempDir() + "/full-before.out";
  const std::string err = ::testing::TempDir() + "/full-before.err";
  const auto began = std::chrono::steady_clock::now();
  const int status = WaitForExit(StartLaunch(spec, out, err), 120s);
  const auto took = std::chrono::steady_clock::now() - began;
  const std::string messages = ReadTextFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << messages;
  EXPECT_EQ(3, WEXITSTATUS(status)) << messages;
  EXPECT_TRUE(
      std::regex_search(messages, std::regex("w1 \\([^)]*\\): prepare: .*No space left on device")))
      << messages;
  EXPECT_NE(std::string::npos, messages.find("nothing was started anywhere")) << messages;
  // It answered at once: it used to wait 40 s for an outcome w1 could never record.
  EXPECT_LT(took, 30s) << messages;
  // Nothing was started, and nothing half-written stays on w1.
  EXPECT_EQ(0, pod_->CountProcesses(marker));
  EXPECT_NE(0, pod_->Exec(1, "test -e /root/.podrun/jobs/full-before").exit_code);
  CommandResult st = RunCommand(Podrun() + " status full-before");
  EXPECT_NE(std::string::npos, st.output.find("No space left on device")) << st.output;
  RestoreWorker1Home();
}

TEST_F(AgentFaultTest, AJobSilentForStallSecondsIsHungAndStopped) {
  const std::string marker = "podrun-stall-marker-" + std::to_string(::getpid());
  const std::string spec =
      WriteSpec("hung",
                "name: hung\nstall_seconds: 2\ngrace_seconds: 1\nrun: |\n  echo initializing\n"
                "  exec -a " +
                    marker + " sleep 600\n");
  const std::string out = ::testing::TempDir() + "/hung.out";
  const std::string err = ::testing::TempDir() + "/hung.err";
  const auto began = std::chrono::steady_clock::now();
  const pid_t launcher = StartLaunch(spec, out, err);
  const int status = WaitForExit(launcher, 60s);
  const std::string messages = ReadTextFile(err);
  ASSERT_TRUE(WIFEXITED(status)) << messages;
  EXPECT_EQ(1, WEXITSTATUS(status)) << messages;
  EXPECT_LT(std::chrono::steady_clock::now() - began, 30s) << messages;
  EXPECT_NE(std::string::npos, messages.find("hung: no output from any worker for 2 s"))
      << messages;
  // Each worker named with its silence and its last line.
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_TRUE(std::regex_search(
        messages, std::regex("w" + std::to_string(i) +
                             " \\([^)]*\\): silent for [0-9]+ s; last line: initializing")))
        << "w" << i << "\n"
        << messages;
  }
  EXPECT_TRUE(WaitUntil([&] { return pod_->CountProcesses(marker) == 0; }, 30s)) << messages;
}

}  // namespace
}  // namespace podrun::testing
