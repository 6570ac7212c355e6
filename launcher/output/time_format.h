// Times and durations as podrun's status and ls print them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace podrun {

// Local time of `unix_ns` (ns since the epoch): "2024-05-01 14:03:07".
std::string FormatLocalTime(int64_t unix_ns);
// RFC 3339 local time with its offset, for JSON: "2024-05-01T14:03:07.123+02:00".
std::string FormatRfc3339(int64_t unix_ns);
// The same in UTC, for logs read elsewhere and later: "2024-05-01T12:03:07.123Z".
std::string FormatRfc3339Utc(int64_t unix_ns);
// A duration for people: "850ms", "42s", "3m05s", "2h07m", "3d04h". Negative counts as 0.
std::string FormatDuration(int64_t ns);
// A wait for people, without a trailing zero unit: "0s", "1m", "3m05s", "6h", "2h07m".
std::string FormatSpan(std::chrono::seconds s);

}  // namespace podrun
