// ProcessProbe: what each of a job's processes is doing now, for `podrun why`: its state, the
// kernel function and system call it waits in, its CPU use over a short window, its threads and
// whether it catches a given signal, read from /proc. Optionally sends a signal first, only to
// the processes that catch it (a program that dumps its own stacks on SIGUSR1, e.g. Python's
// faulthandler.register, while a shell beside it that would die of it is spared).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/process_identity.h"
#include "worker/job/proc_stat.h"

namespace podrun::agent {

// The longest command line reported.
inline constexpr size_t kCmdlineMaxBytes = 256;
// The most processes of one job probed: the leader and the busiest (CPU time so far) first.
inline constexpr size_t kMaxProbedProcesses = 64;

// One process as `podrun why` reports it (proto's ProcessReport).
struct ProcessProbe {
  pid_t pid = 0, ppid = 0;
  uint64_t start_ticks = 0;  // its identity with pid (proc_stat.h)
  char state_code = '?';     // /proc/<pid>/stat's state letter
  std::string command;       // comm
  std::string cmdline;       // at most kCmdlineMaxBytes, NULs as spaces
  // The state and wait channel it was seen in most often over the CPU window (sampled ten
  // times), not at one instant.
  std::string state;       // ProcessStateName(state_code)
  std::string wchan;       // "" while running or unknown
  std::string syscall;     // "" while running or unknown; "#N" for an unnamed number
  double cpu_percent = 0;  // over the window (100: one busy CPU)
  uint32_t threads = 0;
  int64_t started_ns = 0;       // wall clock
  uint64_t caught_signals = 0;  // SigCgt: bit N-1 set when it catches signal N
  bool signalled = false;
  // Filled by stack_dump.h.
  std::string stack_tool, stack, stack_error;

  bool Catches(int sig) const;
  bool IsZombie() const { return state_code == 'Z' || state_code == 'X'; }
};

struct ProbeOptions {
  int signal = 0;  // > 0: sent, before the window, to the processes that catch it
  std::chrono::milliseconds cpu_window{1000};
  // Where /proc/<pid>/syscall is closed to the agent (TracingNeedsSudo), read it through
  // `sudo -n` (one `head` for all the processes).
  bool sudo_for_syscalls = true;
};

struct JobProbe {
  std::vector<ProcessProbe> processes;  // the leader first, then the busiest
  std::string signal_note;              // what the signal reached ("" if none was asked)
  size_t left_out = 0;                  // processes past kMaxProbedProcesses, not probed
};

// Probes `procs` (a job's, as /proc/<pid>/stat read them; `leader` is put first, then the
// processes by CPU time so far, at most kMaxProbedProcesses): takes their CPU time, sends the
// signal, samples their state through the window (stopping at the window plus a short slack,
// however slow /proc is), then reads the rest. Processes gone by then are left out.
JobProbe ProbeProcesses(const std::vector<ProcStat>& procs, pid_t leader,
                        const ProbeOptions& options);

// Probes the processes of the job `leader` leads (JobProcesses).
JobProbe ProbeJob(const ProcessIdentity& leader, const ProbeOptions& options);

// True when Yama keeps the agent from tracing processes that are not its descendants (a job's,
// started through a double fork): ptrace_scope >= 1 and not root. Their /proc/<pid>/syscall is
// then unreadable to it, and gdb or py-spy need `sudo -n`.
bool TracingNeedsSudo();

// The /proc/<pid>/syscall lines of `head -v -n1 /proc/A/syscall /proc/B/syscall ...`'s output,
// by pid (each file is named in a "==> NAME <==" line before its own).
std::map<pid_t, std::string> ParseHeadSyscalls(std::string_view out);

// "running", "sleeping", "disk wait", "stopped", "tracing stop", "zombie", "idle" for R, S, D, T,
// t, Z, I; "dead" for X; "?" for anything else.
std::string ProcessStateName(char state);

// The current system call from the text of /proc/<pid>/syscall: "" while running, when not in
// one (-1) or when unreadable; else SyscallName of its first field.
std::string SyscallFromProc(std::string_view text);

// The fields of /proc/<pid>/status a probe needs.
struct ProcStatus {
  uint32_t threads = 0;
  uint64_t caught_signals = 0;  // SigCgt
};
ProcStatus ParseProcStatus(std::string_view text);

// /proc/<pid>/cmdline as text: NULs as spaces, no trailing space, cut to kCmdlineMaxBytes,
// valid UTF-8.
std::string CmdlineText(std::string_view raw);

// `raw` as valid UTF-8 (proto3 strings must be): each byte that does not begin a valid sequence
// becomes '?'; cut to at most `max_bytes` at a character boundary.
std::string Utf8Text(std::string_view raw, size_t max_bytes);

// "SIGUSR1" (or "signal N" for one without a name).
std::string SignalName(int sig);

}  // namespace podrun::agent
