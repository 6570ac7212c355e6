// Say: "podrun: <message>" on stderr.
#include "launcher/output/say.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>

#include "launcher/output/live_progress.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

std::atomic<bool> stamped{false};

std::string Stamp() {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z ", text, ms % 1000);
}

}  // namespace

void Say(const std::string& message) {
  WriteAll(STDERR_FILENO, LiveProgress::ClearPrefix() + (stamped ? Stamp() : std::string()) +
                              "podrun: " + message + "\n");
}

void StampSayings() { stamped = true; }

}  // namespace podrun
