// Reading a job's CPU, memory and accelerators from /proc (see job_usage.h).
#include "worker/job/job_usage.h"

#include <time.h>
#include <unistd.h>

#include "worker/host/accelerators.h"

namespace podrun::agent {
namespace {

int64_t MonotonicNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

JobUsage ReadJobUsage(const ProcessIdentity& leader) {
  JobUsage usage;
  usage.monotonic_ns = MonotonicNs();
  static const auto ticks_per_second = static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
  static const auto page_bytes = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<pid_t> live;
  for (const ProcStat& p : JobProcesses(AllProcesses(), leader)) {
    usage.cpu_ns += p.cpu_ticks * 1'000'000'000 / ticks_per_second;
    usage.rss_bytes += p.rss_pages * page_bytes;
    if (p.state != 'Z' && p.state != 'X') live.push_back(p.pid);
  }
  usage.processes = static_cast<uint32_t>(live.size());
  usage.accelerators = AcceleratorsHeldBy(AcceleratorPatterns(), live);
  return usage;
}

}  // namespace podrun::agent
