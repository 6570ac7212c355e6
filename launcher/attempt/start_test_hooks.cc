// The lockstep start's test hooks (see start_test_hooks.h).
#include "launcher/attempt/start_test_hooks.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "launcher/output/say.h"

namespace podrun {
namespace {

std::optional<unsigned long long> Number(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value, &end, 10);
  if (*end != '\0') return std::nullopt;
  return n;
}

}  // namespace

StartTestHooks StartTestHooks::FromEnvironment() {
  StartTestHooks hooks;
  if (auto n = Number("PODRUN_TEST_STALL_AFTER_STARTS")) hooks.stall_after_starts = *n;
  if (auto ms = Number("PODRUN_TEST_START_CONFIRM_SLACK_MS")) {
    hooks.confirm_slack = std::chrono::milliseconds(*ms);
  }
  return hooks;
}

void StartTestHooks::StallBeforeStart(size_t position) const {
  if (!stall_after_starts || position < *stall_after_starts) return;
  while (true) ::pause();  // until the test kills the launcher
}

void StartTestHooks::SayWhenStalled(size_t answered) const {
  if (!stall_after_starts || answered != *stall_after_starts) return;
  Say(fmt::format("test hook: stalled after {} start{} (PODRUN_TEST_STALL_AFTER_STARTS)", answered,
                  answered == 1 ? "" : "s"));
}

}  // namespace podrun
