// Probing a job's processes through /proc (see process_probe.h).
#include "worker/job/process_probe.h"

#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "proto/run_program.h"
#include "proto/unique_fd.h"
#include "worker/job/syscall_names.h"
#include "worker/job/trusted_program.h"
#include "worker/supervisor/prepared_child.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How often each process's state and wait channel are read during the CPU window.
constexpr int kStateSamples = 10;
// How long past its CPU window the sampling may run (reading /proc for many processes on a
// loaded machine): then the samples taken so far are what is reported.
constexpr std::chrono::milliseconds kSampleSlack{2000};

std::string ProcPath(pid_t pid, const char* file) {
  return "/proc/" + std::to_string(pid) + "/" + file;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

uint64_t TicksPerSecond() {
  static const auto ticks = static_cast<uint64_t>(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  return ticks;
}

// Sends `sig` to `pid` only while it is still the process that started at `start_ticks`: through
// a pidfd where the kernel has them (the check and the signal then name one process for sure).
bool SignalProcess(pid_t pid, uint64_t start_ticks, int sig) {
  auto same = [&] {
    const std::optional<ProcStat> now = ReadProcStat(pid);
    return now && now->start_ticks == start_ticks && now->state != 'Z';
  };
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd) {
    return same() && ::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) == 0;
  }
  if (errno != ENOSYS) return false;  // gone (ESRCH) or not ours
#endif
  return same() && ::kill(pid, sig) == 0;
}

// Fills what /proc says of `p` beyond its stat. False when its system call could not be read (a
// live process's syscall file is never empty).
bool ReadDetails(ProcessProbe* p, int64_t boot_wall_ns) {
  std::string comm = ReadProcFile(ProcPath(p->pid, "comm"), 64);
  p->command = Utf8Text(Trim(comm), 64);
  p->cmdline = CmdlineText(WithoutShellPreamble(
      ReadProcFile(ProcPath(p->pid, "cmdline"), kCmdlineMaxBytes + kShellPreambleMaxBytes + 1)));
  p->state = ProcessStateName(p->state_code);
  const std::string wchan(Trim(ReadProcFile(ProcPath(p->pid, "wchan"), 256)));
  p->wchan = wchan == "0" ? "" : Utf8Text(wchan, 128);
  const std::string syscall = ReadProcFile(ProcPath(p->pid, "syscall"), 512);
  p->syscall = SyscallFromProc(syscall);
  const ProcStatus status = ParseProcStatus(ReadProcFile(ProcPath(p->pid, "status"), 16 << 10));
  p->threads = status.threads;
  p->caught_signals = status.caught_signals;
  p->started_ns =
      boot_wall_ns + static_cast<int64_t>(p->start_ticks * 1'000'000'000 / TicksPerSecond());
  return !syscall.empty() || p->IsZombie();
}

// How long `sudo -n head` may take before it is stopped.
constexpr auto kSudoHeadDeadline = std::chrono::seconds(5);

// The current system calls of the probes whose /proc/<pid>/syscall was unreadable, read through
// `sudo -n` in one program (sudo and head by their full paths, found where only root can write).
void ReadSyscallsThroughSudo(std::vector<ProcessProbe*>& unread) {
  const std::vector<std::string> dirs = ProgramSearchDirs();
  const std::string sudo = FindTrustedProgram(dirs, "sudo");
  const std::string head = FindTrustedProgram(dirs, "head");
  if (sudo.empty() || head.empty()) return;  // the system calls stay unknown
  std::vector<std::string> argv = {sudo, "-n", head, "-v", "-n1", "--"};
  for (const ProcessProbe* p : unread) argv.push_back(ProcPath(p->pid, "syscall"));
  // sudo may hang (a PAM module, a directory service): the system calls then stay unknown.
  const ProgramResult result = RunProgramWithin(argv, kSudoHeadDeadline);
  if (result.exit_code < 0 || result.timed_out) return;  // no sudo: the calls stay unknown
  // Exits 1 when a process ended meanwhile: the others' lines are still there.
  const std::map<pid_t, std::string> lines = ParseHeadSyscalls(result.out);
  for (ProcessProbe* p : unread) {
    if (const auto it = lines.find(p->pid); it != lines.end()) {
      p->syscall = SyscallFromProc(it->second);
    }
  }
}

}  // namespace

bool TracingNeedsSudo() {
  const std::string text = ReadProcFile("/proc/sys/kernel/yama/ptrace_scope", 16);
  int scope = 0;
  std::from_chars(text.data(), text.data() + text.size(), scope);
  return scope >= 1 && ::geteuid() != 0;
}

std::map<pid_t, std::string> ParseHeadSyscalls(std::string_view out) {
  std::map<pid_t, std::string> lines;
  pid_t pid = 0;  // of the file whose header came last (0: none)
  while (!out.empty()) {
    const size_t eol = out.find('\n');
    const std::string_view line = out.substr(0, eol);
    out = eol == std::string_view::npos ? std::string_view() : out.substr(eol + 1);
    constexpr std::string_view kHead = "==> /proc/", kTail = "/syscall <==";
    if (line.starts_with(kHead) && line.ends_with(kTail)) {
      const std::string_view number =
          line.substr(kHead.size(), line.size() - kHead.size() - kTail.size());
      const char* end = number.data() + number.size();
      if (std::from_chars(number.data(), end, pid).ptr != end || pid <= 0) pid = 0;
    } else if (pid > 0 && !line.empty()) {
      lines.emplace(pid, std::string(line));
      pid = 0;
    }
  }
  return lines;
}

bool ProcessProbe::Catches(int sig) const {
  return sig >= 1 && sig <= 64 && (caught_signals >> (sig - 1)) & 1;
}

std::string ProcessStateName(char state) {
  switch (state) {
    case 'R':
      return "running";
    case 'S':
      return "sleeping";
    case 'D':
      return "disk wait";
    case 'T':
      return "stopped";
    case 't':
      return "tracing stop";
    case 'Z':
      return "zombie";
    case 'I':
      return "idle";
    case 'X':
      return "dead";
    default:
      return "?";
  }
}

std::string SyscallFromProc(std::string_view text) {
  text = Trim(text);
  const std::string_view first = text.substr(0, text.find(' '));
  long number = 0;
  const auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), number);
  if (first.empty() || ec != std::errc() || end != first.data() + first.size() || number < 0) {
    return "";  // "running", -1 (not in a system call) or unreadable
  }
  return SyscallName(number);
}

ProcStatus ParseProcStatus(std::string_view text) {
  ProcStatus status;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    const char* end = value.data() + value.size();
    if (key == "Threads") {
      uint32_t threads = 0;
      if (std::from_chars(value.data(), end, threads).ptr == end) status.threads = threads;
    } else if (key == "SigCgt") {
      uint64_t mask = 0;
      if (std::from_chars(value.data(), end, mask, 16).ptr == end) status.caught_signals = mask;
    }
  }
  return status;
}

std::string CmdlineText(std::string_view raw) {
  std::string text = Utf8Text(raw, kCmdlineMaxBytes);
  std::replace(text.begin(), text.end(), '\0', ' ');
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

std::string Utf8Text(std::string_view raw, size_t max_bytes) {
  std::string text;
  size_t i = 0;
  while (i < raw.size()) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(raw[k]); };
    const unsigned char c = byte(i);
    size_t len = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    if (len > 1) {
      uint32_t cp = c & (0x7F >> len);
      for (size_t k = 1; k < len; ++k) {
        if (i + k >= raw.size() || (byte(i + k) & 0xC0) != 0x80) {
          len = 0;
          break;
        }
        cp = (cp << 6) | (byte(i + k) & 0x3F);
      }
      const uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
      if (len > 1 && (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
        len = 0;
      }
    }
    const size_t out_len = len == 0 ? 1 : len;
    if (text.size() + out_len > max_bytes) break;
    if (len == 0) {
      text.push_back('?');
    } else {
      text.append(raw.substr(i, len));
    }
    i += out_len;
  }
  return text;
}

std::string SignalName(int sig) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
#endif
  return "signal " + std::to_string(sig);
}

JobProbe ProbeProcesses(const std::vector<ProcStat>& procs, pid_t leader,
                        const ProbeOptions& options) {
  JobProbe probe;
  // The leader first, then the busiest (CPU time so far); at most kMaxProbedProcesses.
  std::vector<ProcStat> first = procs;
  std::sort(first.begin(), first.end(), [&](const ProcStat& a, const ProcStat& b) {
    return std::tuple(a.pid != leader, -static_cast<int64_t>(a.own_cpu_ticks), a.pid) <
           std::tuple(b.pid != leader, -static_cast<int64_t>(b.own_cpu_ticks), b.pid);
  });
  if (first.size() > kMaxProbedProcesses) {
    probe.left_out = first.size() - kMaxProbedProcesses;
    first.resize(kMaxProbedProcesses);
  }
  const int64_t window_begin = ClockNs(CLOCK_MONOTONIC);

  // The signal, before the window, so that what it makes a program print lands in the job's
  // log while the window runs.
  std::set<pid_t> signalled;
  if (options.signal > 0) {
    int live = 0, sent = 0;
    for (const ProcStat& stat : first) {
      if (stat.state == 'Z' || stat.state == 'X') continue;
      ++live;
      ProcessProbe p;
      p.caught_signals =
          ParseProcStatus(ReadProcFile(ProcPath(stat.pid, "status"), 16 << 10)).caught_signals;
      if (p.Catches(options.signal) && SignalProcess(stat.pid, stat.start_ticks, options.signal)) {
        signalled.insert(stat.pid);
        ++sent;
      }
    }
    const std::string name = SignalName(options.signal);
    if (live == 0) {
      probe.signal_note = name + " not sent: the job has no live processes";
    } else {
      probe.signal_note = name + " sent to " + std::to_string(sent) + " of " +
                          std::to_string(live) + (live == 1 ? " process" : " processes");
      if (sent == 0) {
        probe.signal_note += live == 1 ? " (it does not catch it)" : " (none catches it)";
      } else if (sent < live) {
        probe.signal_note += " (the others do not catch it)";
      }
    }
  }

  // The state and wait channel, sampled through the window: what a process mostly did, not what
  // it happened to do at one instant (a loop that sleeps 50 ms at a time is sleeping, though
  // one read in twenty finds it running).
  std::map<pid_t, std::map<std::pair<char, std::string>, int>> seen;
  const auto window_start = Clock::now();
  const auto samples_deadline = window_start + options.cpu_window + kSampleSlack;
  for (int i = 1; i <= kStateSamples && Clock::now() < samples_deadline; ++i) {
    for (const ProcStat& stat : first) {
      const std::optional<ProcStat> now = ReadProcStat(stat.pid);
      if (!now || now->start_ticks != stat.start_ticks) continue;
      const std::string wchan(Trim(ReadProcFile(ProcPath(stat.pid, "wchan"), 256)));
      ++seen[stat.pid][{now->state, wchan == "0" || now->state == 'R' ? "" : wchan}];
    }
    std::this_thread::sleep_until(window_start + options.cpu_window * i / kStateSamples);
  }

  const int64_t window_ns = std::max<int64_t>(1, ClockNs(CLOCK_MONOTONIC) - window_begin);
  const int64_t boot_wall_ns = ClockNs(CLOCK_REALTIME) - ClockNs(CLOCK_BOOTTIME);
  std::vector<bool> unread_syscall;
  for (const ProcStat& before : first) {
    const std::optional<ProcStat> after = ReadProcStat(before.pid);
    if (!after || after->start_ticks != before.start_ticks) continue;  // gone meanwhile
    ProcessProbe p;
    p.pid = after->pid;
    p.ppid = after->ppid;
    p.start_ticks = after->start_ticks;
    p.state_code = after->state;
    const uint64_t ticks =
        after->own_cpu_ticks - std::min(after->own_cpu_ticks, before.own_cpu_ticks);
    p.cpu_percent = static_cast<double>(ticks) * 1e9 / static_cast<double>(TicksPerSecond()) /
                    static_cast<double>(window_ns) * 100.0;
    p.signalled = signalled.contains(p.pid);
    unread_syscall.push_back(!ReadDetails(&p, boot_wall_ns));
    if (auto it = seen.find(p.pid); it != seen.end() && !it->second.empty()) {
      const auto mostly =
          std::max_element(it->second.begin(), it->second.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      p.state_code = mostly->first.first;
      p.state = ProcessStateName(p.state_code);
      p.wchan = Utf8Text(mostly->first.second, 128);
      if (p.state_code == 'R') p.syscall.clear();
    }
    probe.processes.push_back(std::move(p));
  }
  std::vector<ProcessProbe*> unread;
  for (size_t i = 0; i < probe.processes.size(); ++i) {
    if (unread_syscall[i]) unread.push_back(&probe.processes[i]);
  }
  if (!unread.empty() && options.sudo_for_syscalls && TracingNeedsSudo()) {
    ReadSyscallsThroughSudo(unread);
  }
  return probe;
}

JobProbe ProbeJob(const ProcessIdentity& leader, const ProbeOptions& options) {
  return ProbeProcesses(JobProcesses(AllProcesses(), leader), leader.pid, options);
}

}  // namespace podrun::agent
