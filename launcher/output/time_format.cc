// Formatting times for people and for JSON.
#include "launcher/output/time_format.h"

#include <fmt/format.h>

#include <ctime>

namespace podrun {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

std::tm LocalTm(int64_t unix_ns) {
  std::time_t seconds = static_cast<std::time_t>(unix_ns / kNsPerSecond);
  std::tm tm{};
  ::localtime_r(&seconds, &tm);
  return tm;
}

}  // namespace

std::string FormatLocalTime(int64_t unix_ns) {
  std::tm tm = LocalTm(unix_ns);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S", &tm);
  return buffer;
}

std::string FormatRfc3339(int64_t unix_ns) {
  std::tm tm = LocalTm(unix_ns);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  long offset_minutes = tm.tm_gmtoff / 60;
  char sign = offset_minutes < 0 ? '-' : '+';
  if (offset_minutes < 0) offset_minutes = -offset_minutes;
  return fmt::format("{}.{:03d}{}{:02d}:{:02d}", buffer, (unix_ns % kNsPerSecond) / 1'000'000, sign,
                     offset_minutes / 60, offset_minutes % 60);
}

std::string FormatRfc3339Utc(int64_t unix_ns) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ns / kNsPerSecond);
  std::tm tm{};
  ::gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buffer, (unix_ns % kNsPerSecond) / 1'000'000);
}

std::string FormatDuration(int64_t ns) {
  if (ns < 0) ns = 0;
  if (ns < kNsPerSecond) return fmt::format("{}ms", ns / 1'000'000);
  int64_t s = ns / kNsPerSecond;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02d}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02d}h", s / 86400, (s % 86400) / 3600);
}

std::string FormatSpan(std::chrono::seconds s) {
  if (s.count() <= 0) return "0s";
  std::string text = FormatDuration(std::chrono::nanoseconds(s).count());
  for (const char* zero : {"00s", "00m", "00h"}) {
    if (text.size() > 3 && text.ends_with(zero)) text.resize(text.size() - 3);
  }
  return text;
}

}  // namespace podrun
