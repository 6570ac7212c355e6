// Tests of probing processes for `podrun why`: parsing /proc's files (state letters, syscall,
// status, cmdline, UTF-8), and real children: one sleeping in a sleep system call, one busy on a
// CPU, a Python program that dumps its stack on SIGUSR1 beside a `sleep` that would die of it,
// and a job's process group led by a shell.
#include "worker/job/process_probe.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "proto/spawn.h"
#include "proto/unique_fd.h"
#include "worker/job/syscall_names.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

// A child started for a test; SIGKILLed (its group too when it leads one) and reaped at the end.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv, std::vector<SpawnFd> fds = {},
                 SpawnGroup group = SpawnGroup::kInherit)
      : pid_(SpawnProcess({.argv = argv, .fds = std::move(fds), .group = group})),
        group_(group != SpawnGroup::kInherit) {}
  ~Child() {
    ::kill(group_ ? -pid_ : pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
  bool group_;
};

std::vector<ProcStat> Stats(const std::vector<pid_t>& pids) {
  std::vector<ProcStat> stats;
  for (pid_t pid : pids) {
    if (auto stat = ReadProcStat(pid)) stats.push_back(*stat);
  }
  return stats;
}

// Waits until `pid` sleeps in a system call (what a probe then sees).
void WaitAsleep(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string syscall =
        SyscallFromProc(ReadProcFile("/proc/" + std::to_string(pid) + "/syscall"));
    if (syscall == "nanosleep" || syscall == "clock_nanosleep") return;
    std::this_thread::sleep_for(20ms);
  }
}

TEST(ProcessProbeTest, ParsesProcFiles) {
  EXPECT_EQ(ProcessStateName('R'), "running");
  EXPECT_EQ(ProcessStateName('S'), "sleeping");
  EXPECT_EQ(ProcessStateName('D'), "disk wait");
  EXPECT_EQ(ProcessStateName('T'), "stopped");
  EXPECT_EQ(ProcessStateName('t'), "tracing stop");
  EXPECT_EQ(ProcessStateName('Z'), "zombie");
  EXPECT_EQ(ProcessStateName('I'), "idle");

  EXPECT_EQ(SyscallFromProc("running\n"), "");
  EXPECT_EQ(SyscallFromProc("-1 0x7ffc 0x7f00\n"), "");
  EXPECT_EQ(SyscallFromProc(""), "");
  EXPECT_EQ(SyscallFromProc(std::to_string(SYS_futex) + " 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8\n"),
            "futex");
  EXPECT_EQ(SyscallFromProc(std::to_string(SYS_epoll_wait) + " 0x1\n"), "epoll_wait");
  EXPECT_EQ(SyscallName(SYS_clock_nanosleep), "clock_nanosleep");
  EXPECT_EQ(SyscallName(SYS_io_uring_enter), "io_uring_enter");
  EXPECT_EQ(SyscallName(99999), "#99999");

  const ProcStatus status = ParseProcStatus(
      "Name:\tpython3\nState:\tS (sleeping)\nThreads:\t7\nSigQ:\t0/63448\n"
      "SigPnd:\t0000000000000000\nSigBlk:\t0000000000000000\nSigIgn:\t0000000001001000\n"
      "SigCgt:\t0000000180000202\n");
  EXPECT_EQ(status.threads, 7u);
  EXPECT_EQ(status.caught_signals, 0x180000202u);
  ProcessProbe p;
  p.caught_signals = status.caught_signals;
  EXPECT_TRUE(p.Catches(SIGINT));   // bit 1
  EXPECT_TRUE(p.Catches(SIGUSR1));  // bit 9
  EXPECT_FALSE(p.Catches(SIGUSR2));
  EXPECT_FALSE(p.Catches(0));
  EXPECT_FALSE(p.Catches(65));

  EXPECT_EQ(CmdlineText(std::string("python3\0-c\0print(1)\0", 20)), "python3 -c print(1)");
  EXPECT_EQ(CmdlineText(std::string(300, 'x')).size(), kCmdlineMaxBytes);
  EXPECT_EQ(Utf8Text("caf\xc3\xa9 \xff\xc0\xaf ok", 100), "caf\xc3\xa9 ??? ok");
  EXPECT_EQ(Utf8Text("ab\xc3\xa9", 3), "ab");      // never half a character
  EXPECT_EQ(Utf8Text("\xed\xa0\x80", 10), "???");  // a surrogate
  EXPECT_EQ(SignalName(SIGUSR1), "SIGUSR1");

  // `sudo -n head -v -n1 /proc/A/syscall ...` where the agent cannot read them itself.
  const std::map<pid_t, std::string> lines = ParseHeadSyscalls(
      "==> /proc/12/syscall <==\n202 0x1 0x2\n\n==> /proc/13/syscall <==\nrunning\n\n"
      "==> /proc/x/syscall <==\n7 0x1\n");
  EXPECT_EQ(lines, (std::map<pid_t, std::string>{{12, "202 0x1 0x2"}, {13, "running"}}));
}

TEST(ProcessProbeTest, ASleepingChildSleepsInASleepCall) {
  Child child({"sleep", "60"});
  WaitAsleep(child.pid());
  const JobProbe probe = ProbeProcesses(Stats({child.pid()}), child.pid(), {.cpu_window = 200ms});
  ASSERT_EQ(probe.processes.size(), 1u);
  const ProcessProbe& p = probe.processes[0];
  EXPECT_EQ(p.pid, child.pid());
  EXPECT_EQ(p.ppid, ::getpid());
  EXPECT_EQ(p.command, "sleep");
  EXPECT_EQ(p.cmdline, "sleep 60");
  EXPECT_EQ(p.state, "sleeping");
  EXPECT_TRUE(p.syscall == "nanosleep" || p.syscall == "clock_nanosleep") << p.syscall;
  EXPECT_NE(p.wchan, "0");
  EXPECT_LT(p.cpu_percent, 20);
  EXPECT_EQ(p.threads, 1u);
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  EXPECT_LE(p.started_ns, now_ns);
  EXPECT_GT(p.started_ns, now_ns - int64_t{60'000'000'000});
  EXPECT_FALSE(p.signalled);
  EXPECT_EQ(probe.signal_note, "");
}

TEST(ProcessProbeTest, ALoopOfShortSleepsReadsAsSleepingWhateverTheInstant) {
  // Awake a moment every 20 ms: one read in many finds it running, the window's samples do not.
  Child child({"python3", "-c", "import time\nwhile True: time.sleep(0.02)"});
  WaitAsleep(child.pid());
  for (int round = 0; round < 5; ++round) {
    const JobProbe probe = ProbeProcesses(Stats({child.pid()}), child.pid(), {.cpu_window = 300ms});
    ASSERT_EQ(probe.processes.size(), 1u);
    EXPECT_EQ(probe.processes[0].state, "sleeping") << round;
    EXPECT_NE(probe.processes[0].wchan, "") << round;
  }
}

TEST(ProcessProbeTest, ABusyChildRunsOnACpu) {
  Child child({"/bin/sh", "-c", "while :; do :; done"});
  // Until it has spun a tick (then it is past its start and busy).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (ReadProcStat(child.pid()).value_or(ProcStat{}).own_cpu_ticks == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(5ms);
  }
  const JobProbe probe = ProbeProcesses(Stats({child.pid()}), child.pid(), {.cpu_window = 1000ms});
  ASSERT_EQ(probe.processes.size(), 1u);
  const ProcessProbe& p = probe.processes[0];
  EXPECT_EQ(p.state, "running");
  EXPECT_EQ(p.syscall, "");
  // Busy, but sharing two loaded cores with others: a margin that holds on a loaded machine.
  EXPECT_GT(p.cpu_percent, 5);
  EXPECT_LT(p.cpu_percent, 110);
}

TEST(ProcessProbeTest, TheSignalGoesOnlyToProcessesThatCatchIt) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "probe.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const std::filesystem::path dir = tmpl;
  const std::filesystem::path err_path = dir / "stderr";
  {
    const UniqueFd err(::open(err_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    ASSERT_TRUE(err);
    int out[2];
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    UniqueFd out_r(out[0]), out_w(out[1]);
    Child python({"python3", "-c",
                  "import faulthandler, signal, sys, time\n"
                  "faulthandler.register(signal.SIGUSR1, file=sys.stderr)\n"
                  "def wait_for_collective():\n"
                  "    print('ready', flush=True)\n"
                  "    while True:\n"
                  "        time.sleep(0.05)\n"
                  "wait_for_collective()\n"},
                 {{STDOUT_FILENO, out_w.get()}, {STDERR_FILENO, err.get()}});
    Child sleeper({"sleep", "60"});
    out_w.reset();
    std::string said;
    char c = 0;
    while (said.size() < 100 && ::read(out_r.get(), &c, 1) == 1 && c != '\n') said += c;
    ASSERT_EQ(said, "ready");

    const JobProbe probe = ProbeProcesses(Stats({python.pid(), sleeper.pid()}), python.pid(),
                                          {.signal = SIGUSR1, .cpu_window = 300ms});
    EXPECT_EQ(probe.signal_note, "SIGUSR1 sent to 1 of 2 processes (the others do not catch it)");
    ASSERT_EQ(probe.processes.size(), 2u);
    EXPECT_EQ(probe.processes[0].pid, python.pid());  // the leader first
    EXPECT_TRUE(probe.processes[0].signalled);
    EXPECT_TRUE(probe.processes[0].Catches(SIGUSR1));
    EXPECT_EQ(probe.processes[1].pid, sleeper.pid());
    EXPECT_FALSE(probe.processes[1].signalled);

    std::string dumped;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (dumped.find("wait_for_collective") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
      std::ifstream in(err_path);
      dumped.assign(std::istreambuf_iterator<char>(in), {});
    }
    EXPECT_NE(dumped.find("wait_for_collective"), std::string::npos) << dumped;
    // The sibling that does not catch it is alive and well.
    const std::optional<ProcStat> sleeping = ReadProcStat(sleeper.pid());
    ASSERT_TRUE(sleeping);
    EXPECT_NE(sleeping->state, 'Z');
    int status = 0;
    EXPECT_EQ(::waitpid(sleeper.pid(), &status, WNOHANG), 0);
  }
  std::filesystem::remove_all(dir);
}

TEST(ProcessProbeTest, NoSignalSentWhenNoneCatchesIt) {
  Child sleeper({"sleep", "60"});
  WaitAsleep(sleeper.pid());
  const JobProbe probe =
      ProbeProcesses(Stats({sleeper.pid()}), sleeper.pid(), {.signal = SIGUSR2, .cpu_window = 0ms});
  EXPECT_EQ(probe.signal_note, "SIGUSR2 sent to 0 of 1 process (it does not catch it)");
  ASSERT_EQ(probe.processes.size(), 1u);
  EXPECT_FALSE(probe.processes[0].signalled);
}

TEST(ProcessProbeTest, ProbesAJobsGroupLeaderFirst) {
  Child leader({"/bin/sh", "-c", "sleep 60 & wait"}, {}, SpawnGroup::kNewGroup);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  std::optional<ProcessIdentity> identity;
  JobProbe probe;
  do {
    std::this_thread::sleep_for(50ms);
    identity = ProcessIdentity::Of(leader.pid());
    ASSERT_TRUE(identity);
    probe = ProbeJob(*identity, {.cpu_window = 0ms});
  } while (probe.processes.size() < 2 && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(probe.processes.size(), 2u);
  EXPECT_EQ(probe.processes[0].pid, leader.pid());
  EXPECT_EQ(probe.processes[0].command, "sh");
  EXPECT_EQ(probe.processes[1].ppid, leader.pid());
  EXPECT_EQ(probe.processes[1].command, "sleep");
}

}  // namespace
}  // namespace podrun::agent
