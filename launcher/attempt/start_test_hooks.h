// Test hooks of the lockstep start, read from the environment; never set in normal use.
//   PODRUN_TEST_STALL_AFTER_STARTS=N      the launcher sends Start to the attempt's first N
//                                         workers (rank order) only, says so once they have
//                                         answered ("test hook: ..."), and then waits for ever:
//                                         a test kills it there, a launcher lost between two
//                                         workers' Start (docs/reliability.md).
//   PODRUN_TEST_START_CONFIRM_SLACK_MS=MS the confirmation window's slack instead of
//                                         kStartConfirmSlack (connect/clock_sync.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace podrun {

struct StartTestHooks {
  std::optional<size_t> stall_after_starts;
  std::optional<std::chrono::milliseconds> confirm_slack;

  // The hooks the environment sets; a value that is not a number is ignored.
  static StartTestHooks FromEnvironment();

  // With stall_after_starts: the Start of the worker at `position` (0-based, rank order) is
  // never sent: blocks for ever. Else returns at once.
  void StallBeforeStart(size_t position) const;
  // With stall_after_starts: says once (to stderr) when the `answered`-th Start answered is the
  // last one sent.
  void SayWhenStalled(size_t answered) const;
};

}  // namespace podrun
