// JobUsage: what a running job's processes use now, for `podrun top`: CPU time, resident memory
// and the accelerator devices they hold open. The job's processes are its process group and
// every descendant of a member (a child that made a session of its own still counts), as
// /proc shows them. One pass over /proc/<pid>/stat; descriptors only of the job's processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/process_identity.h"

namespace podrun::agent {

// The fields of /proc/<pid>/stat that usage needs.
struct ProcStat {
  pid_t pid = 0;
  char state = '?';  // 'Z' for a zombie
  pid_t ppid = 0;
  pid_t pgrp = 0;
  // utime + stime + cutime + cstime: its own CPU time and that of the children it reaped, so a
  // child's time is not lost from the sum when it ends.
  uint64_t cpu_ticks = 0;
  uint64_t start_ticks = 0;  // since boot
  uint64_t rss_pages = 0;
};

// Parses the text of /proc/<pid>/stat; nullopt if malformed. The command name (field 2) may hold
// spaces and parentheses: the fields after it follow the last ')'.
std::optional<ProcStat> ParseProcStat(std::string_view text);

// The job's processes among `all`: those of the process group `leader` led and their
// descendants, started no earlier than the leader. None when another process now has the
// leader's pid (the job's group was gone before the pid was reused), or another boot's.
std::vector<ProcStat> JobProcesses(const std::vector<ProcStat>& all, const ProcessIdentity& leader);

struct JobUsage {
  int64_t monotonic_ns = 0;  // CLOCK_MONOTONIC when /proc was read
  uint64_t cpu_ns = 0;       // cumulative; a rate needs two samples
  uint64_t rss_bytes = 0;    // summed (pages shared between the processes count for each)
  uint32_t processes = 0;    // live ones (zombies count for CPU only)
  std::vector<std::string> accelerators;  // held open by any of them, sorted
};

// Reads the usage of the job `leader` leads now (all zero once nothing of it is left).
JobUsage ReadJobUsage(const ProcessIdentity& leader);

}  // namespace podrun::agent
