// WallClockNs: the wall clock as the agent records it (start and end times, log records).
#pragma once

#include <chrono>
#include <cstdint>

namespace podrun::agent {

// Wall clock now, in ns since the epoch.
inline int64_t WallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace podrun::agent
