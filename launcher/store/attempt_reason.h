// Why an attempt ran and what ended it, as typed facts (docs/design.md decision 18): written once,
// where the attempt is made or where its end is decided, and read by the keeper's restart budget,
// PODRUN_RESUMED_FROM and reports. Messages are for people; these are for code.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace podrun {

// Why an attempt ran; AddAttempt records it.
enum class AttemptReason {
  kLaunch,                   // podrun launch
  kRerun,                    // podrun rerun
  kRestartAfterFailure,      // restarts: after a worker failed or was lost
  kRestartAfterHang,         // restarts: after the stall watch found the job hung
  kRecoveryAfterPreemption,  // restarts: after the TPU node was preempted (and recreated)
};

// "launch", "rerun", "restart-after-failure", "restart-after-hang", "recovery-after-preemption".
const char* AttemptReasonName(AttemptReason reason);
std::optional<AttemptReason> ParseAttemptReason(std::string_view name);
// True for the reasons podrun itself chose (the restarts), false for launch and rerun.
bool IsAutomatic(AttemptReason reason);

// What ended a failed attempt (nothing for one that succeeded, was stopped or never started).
enum class AttemptEnd { kNone, kFailure, kHang, kPreemption };

// "", "failure", "hang", "preemption": also the values of PODRUN_RESUMED_FROM.
const char* AttemptEndName(AttemptEnd end);
AttemptEnd ParseAttemptEnd(std::string_view name);  // kNone for anything else

// The automatic restart that follows an attempt ended by `end` (kFailure for kNone).
AttemptReason RestartReasonAfter(AttemptEnd end);
// PODRUN_RESUMED_FROM of an attempt that runs for `reason` after an attempt ended by `previous`:
// "" for a launch, the previous end for a rerun ("failure" when it said none), else the end
// the restart follows.
std::string ResumedFrom(AttemptReason reason, AttemptEnd previous);

}  // namespace podrun
