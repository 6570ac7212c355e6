// Say: "podrun: <message>" on stderr.
#include "launcher/output/say.h"

#include <unistd.h>

#include <atomic>
#include <chrono>

#include "launcher/output/live_progress.h"
#include "launcher/output/time_format.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

std::atomic<bool> stamped{false};

std::string Stamp() {
  return FormatRfc3339Utc(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count()) +
         " ";
}

}  // namespace

void Say(const std::string& message) {
  WriteAll(STDERR_FILENO, LiveProgress::ClearPrefix() + (stamped ? Stamp() : std::string()) +
                              "podrun: " + message + "\n");
}

void StampSayings() { stamped = true; }

}  // namespace podrun
