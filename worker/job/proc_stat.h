// Reading processes from /proc: the fields of /proc/<pid>/stat podrun needs, every process on
// the machine, and which of them are a job's. Shared by `podrun top` (job_usage.h) and
// `podrun why` (process_probe.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/process_identity.h"

namespace podrun::agent {

// The fields of /proc/<pid>/stat that podrun needs.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // 'Z' for a zombie
  pid_t ppid = 0;
  pid_t pgrp = 0;
  // utime + stime + cutime + cstime: its own CPU time and that of the children it reaped, so a
  // child's time is not lost from the sum when it ends.
  uint64_t cpu_ticks = 0;
  uint64_t own_cpu_ticks = 0;  // utime + stime: its own only (for a rate of this process)
  uint64_t start_ticks = 0;    // since boot
  uint64_t rss_pages = 0;
};

// Parses the text of /proc/<pid>/stat; nullopt if malformed. The command name (field 2) may hold
// spaces and parentheses: the fields after it follow the last ')'.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// The whole of a small /proc file, at most `max_bytes` of it ("" if it cannot be read).
std::string ReadProcFile(const std::string& path, size_t max_bytes = 1 << 20);

// /proc/<pid>/stat of `pid` now; nullopt once it is gone.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// Every process /proc lists now (those that vanish while it is read are left out).
std::vector<ProcStat> AllProcesses();

// The job's processes among `all`: those of the process group `leader` led and their
// descendants, started no earlier than the leader. None when another process now has the
// leader's pid (the job's group was gone before the pid was reused), or another boot's.
std::vector<ProcStat> JobProcesses(const std::vector<ProcStat>& all, const ProcessIdentity& leader);

}  // namespace podrun::agent
