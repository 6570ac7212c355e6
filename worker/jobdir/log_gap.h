// LogGapInfo: what of a job's output could not be written to its log on disk (a full disk, a
// quota). The supervisor's LogWriter sums it; the job directory records it (JobDir::WriteLogGap)
// for the agent, `status` and the launcher's report.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proto/log_record.h"

namespace podrun::agent {

// What could not be written to disk, summed over the attempt (the proto's LogGap).
struct LogGapInfo {
  uint64_t from_seq = 0;  // the first record not written
  uint64_t bytes = 0;     // output bytes not written
  uint64_t chunks = 0;    // records not written
  std::string cause;      // e.g. "No space left on device"
};

// A gap marker: the record the supervisor's LogWriter writes in place of records the disk
// refused, carrying the seq of the last one it stands for (so a live reader asks the supervisor
// for the records up to it first). Marked by its header's flag (kLogRecordGapMarker), which a
// job's output cannot set; its text, for people, begins with kGapMarkerPrefix.
inline constexpr std::string_view kGapMarkerPrefix = "podrun-agent: log gap: ";
inline bool IsGapMarker(const LogRecord& r) { return (r.flags & kLogRecordGapMarker) != 0; }

}  // namespace podrun::agent
