// See api_outage.h.
#include "launcher/recovery/api_outage.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "launcher/output/say.h"
#include "launcher/output/time_format.h"

namespace podrun {
namespace {

constexpr std::chrono::milliseconds kFirstBackoff{1000};
constexpr std::chrono::milliseconds kMaxBackoff{60'000};

}  // namespace

const char* ApiNameOf(PodSourceKind kind) {
  return kind == PodSourceKind::kMig ? "the Compute Engine API" : "the TPU API";
}

std::chrono::milliseconds ApiOutageBackoff(int n) {
  std::chrono::milliseconds wait = kFirstBackoff;
  for (int i = 1; i < n && wait < kMaxBackoff; ++i) wait *= 2;
  return std::min(wait, kMaxBackoff);
}

ApiOutage::ApiOutage(std::string api, std::chrono::seconds limit, Wait wait,
                     std::function<void(const std::string&)> on_wait, Clock clock)
    : api_(std::move(api)),
      limit_(limit),
      wait_(std::move(wait)),
      on_wait_(std::move(on_wait)),
      clock_(std::move(clock)),
      jitter_state_(static_cast<unsigned>(::getpid()) * 2654435761u) {}

void ApiOutage::Over() {
  if (ongoing_) {
    Say(fmt::format(
        "{} answers again (after {})", api_,
        FormatSpan(std::chrono::duration_cast<std::chrono::seconds>(clock_() - since_))));
  }
  ongoing_ = false;
}

void ApiOutage::WaitAfter(const GcloudError& e) {
  if (!IsTransientGcloudFailure(e.failure())) throw e;
  const auto now = clock_();
  if (!ongoing_) {
    ongoing_ = true;
    since_ = now;
    backoff_ = kFirstBackoff;
  }
  const auto out = std::chrono::duration_cast<std::chrono::seconds>(now - since_);
  const std::string why = e.reason().empty() ? "" : fmt::format(" ({})", e.reason());
  if (out >= limit_) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{} has not answered for {}{}: podrun gave up (create: capacity_wait "
                            "is {}). gcloud said:\n{}",
                            api_, FormatSpan(out), why, FormatSpan(limit_), e.what()));
  }
  // Jitter: 75% to 125% of the backoff, so that many keepers do not ask in step.
  jitter_state_ = jitter_state_ * 1103515245u + 12345u;
  const double factor = 0.75 + 0.5 * static_cast<double>((jitter_state_ >> 8) % 1000) / 1000.0;
  auto pause = std::chrono::duration_cast<std::chrono::milliseconds>(backoff_ * factor);
  pause = std::max(pause, std::chrono::milliseconds(1000));
  const std::string message =
      fmt::format("{} has not answered for {}{}, trying again", api_, FormatSpan(out), why);
  if (out.count() == 0 && backoff_ == kFirstBackoff) {
    Say(fmt::format("{} (every {} at most, for up to {})", message,
                    FormatSpan(std::chrono::duration_cast<std::chrono::seconds>(kMaxBackoff)),
                    FormatSpan(limit_)));
  }
  if (on_wait_) on_wait_(message);
  backoff_ = std::min(backoff_ * 2, kMaxBackoff);
  if (!wait_(std::chrono::duration_cast<std::chrono::seconds>(pause +
                                                              std::chrono::milliseconds(500)))) {
    throw Error(ExitCode::kInterrupted,
                fmt::format("interrupted while {} did not answer{}", api_, why));
  }
}

}  // namespace podrun
