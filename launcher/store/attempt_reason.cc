// See attempt_reason.h.
#include "launcher/store/attempt_reason.h"

#include <array>

namespace podrun {
namespace {

constexpr std::array<const char*, 5> kReasonNames = {
    "launch", "rerun", "restart-after-failure", "restart-after-hang", "recovery-after-preemption"};
constexpr std::array<const char*, 4> kEndNames = {"", "failure", "hang", "preemption"};

}  // namespace

const char* AttemptReasonName(AttemptReason reason) {
  return kReasonNames[static_cast<size_t>(reason)];
}

std::optional<AttemptReason> ParseAttemptReason(std::string_view name) {
  for (size_t i = 0; i < kReasonNames.size(); ++i) {
    if (name == kReasonNames[i]) return static_cast<AttemptReason>(i);
  }
  return std::nullopt;
}

bool IsAutomatic(AttemptReason reason) {
  return reason != AttemptReason::kLaunch && reason != AttemptReason::kRerun;
}

const char* AttemptEndName(AttemptEnd end) { return kEndNames[static_cast<size_t>(end)]; }

AttemptEnd ParseAttemptEnd(std::string_view name) {
  for (size_t i = 1; i < kEndNames.size(); ++i) {
    if (name == kEndNames[i]) return static_cast<AttemptEnd>(i);
  }
  return AttemptEnd::kNone;
}

AttemptReason RestartReasonAfter(AttemptEnd end) {
  switch (end) {
    case AttemptEnd::kHang:
      return AttemptReason::kRestartAfterHang;
    case AttemptEnd::kPreemption:
      return AttemptReason::kRecoveryAfterPreemption;
    case AttemptEnd::kNone:
    case AttemptEnd::kFailure:
      break;
  }
  return AttemptReason::kRestartAfterFailure;
}

std::string ResumedFrom(AttemptReason reason, AttemptEnd previous) {
  switch (reason) {
    case AttemptReason::kLaunch:
      return "";
    case AttemptReason::kRerun:
      return previous == AttemptEnd::kNone ? "failure" : AttemptEndName(previous);
    case AttemptReason::kRestartAfterFailure:
      return "failure";
    case AttemptReason::kRestartAfterHang:
      return "hang";
    case AttemptReason::kRecoveryAfterPreemption:
      return "preemption";
  }
  return "";
}

}  // namespace podrun
