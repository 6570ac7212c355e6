// JobUsage: what a running job's processes use now, for `podrun top`: CPU time, resident memory
// and the accelerator devices they hold open. The job's processes are its process group and
// every descendant of a member (a child that made a session of its own still counts), as
// /proc shows them. One pass over /proc/<pid>/stat; descriptors only of the job's processes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "proto/process_identity.h"
#include "worker/job/proc_stat.h"

namespace podrun::agent {

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
