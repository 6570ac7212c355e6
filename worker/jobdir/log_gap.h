// LogGapInfo: what of a job's output could not be written to its log on disk (a full disk, a
// quota). The supervisor's LogWriter sums it; the job directory records it (JobDir::WriteLogGap)
// for the agent, `status` and the launcher's report.
#pragma once

#include <cstdint>
#include <string>

namespace podrun::agent {

// What could not be written to disk, summed over the attempt (the proto's LogGap).
struct LogGapInfo {
  uint64_t from_seq = 0;  // the first record not written
  uint64_t bytes = 0;     // output bytes not written
  uint64_t chunks = 0;    // records not written
  std::string cause;      // e.g. "No space left on device"
};

}  // namespace podrun::agent
