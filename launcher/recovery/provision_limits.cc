// See provision_limits.h.
#include "launcher/recovery/provision_limits.h"

#include <algorithm>
#include <cstdlib>

namespace podrun {
namespace {

// A positive number of seconds from the environment variable `name`, else `fallback`.
std::chrono::seconds SecondsFromEnv(const char* name, std::chrono::seconds fallback) {
  if (const char* env = std::getenv(name)) {
    const int seconds = std::atoi(env);
    if (seconds > 0) return std::chrono::seconds(seconds);
  }
  return fallback;
}

}  // namespace

std::chrono::seconds ProvisionPollInterval(std::chrono::seconds fallback) {
  return SecondsFromEnv("PODRUN_TPU_POLL_SECONDS", fallback);
}

std::chrono::seconds CapacityBackoff() {
  return SecondsFromEnv("PODRUN_TPU_CAPACITY_BACKOFF_SECONDS", std::chrono::seconds(30));
}

std::chrono::seconds CreatingDeadline() {
  return SecondsFromEnv("PODRUN_TPU_CREATING_DEADLINE_SECONDS", std::chrono::minutes(30));
}

std::chrono::milliseconds UntilNextPoll(std::chrono::seconds poll,
                                        std::chrono::steady_clock::duration spent) {
  const std::chrono::milliseconds every = poll;
  return std::max(every / 4, every - std::chrono::duration_cast<std::chrono::milliseconds>(spent));
}

}  // namespace podrun
