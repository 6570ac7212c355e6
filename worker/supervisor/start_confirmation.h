// StartConfirmation: whether a job's start was confirmed in time (proto/agent.proto, Confirm).
// A gang must never run in part: the launcher sends Start to every worker, then, once every
// Start was answered, Confirm to all. A launcher lost in between (kill -9, a closed laptop) would
// leave the workers that got Start running alone, so a job started with a confirmation window is
// stopped by its own supervisor when no Confirm came within it of its release. Kept by the
// supervisor (not the agent), so the window holds across a restart of the agent; a confirmed job
// is never stopped by it. Pure state: the supervisor's loop feeds it the time. One thread.
#pragma once

#include <chrono>

namespace podrun::agent {

class StartConfirmation {
 public:
  using Clock = std::chrono::steady_clock;

  // Before GO: the start must be confirmed within `window` of the job's release; if not, it is
  // stopped with `grace` between SIGTERM and SIGKILL. A later call changes nothing once armed.
  void Require(std::chrono::milliseconds window, std::chrono::seconds grace);
  // The job was released (it exec'd) at `now`: its window starts if one was required.
  void Arm(Clock::time_point now);
  // A Confirm came: true if it counts (nothing required, or in time: from now on nothing stops
  // the job for this); false once the window has passed and the job is being stopped.
  bool Confirm();
  // True once, at the first call at or after the deadline of an armed, unconfirmed window: the
  // caller stops the job; given_up() from then on.
  bool Due(Clock::time_point now);

  // When Due would first say true; Clock::time_point::max() while nothing is pending.
  Clock::time_point deadline() const;
  bool required() const { return window_.count() > 0; }
  bool confirmed() const { return confirmed_; }
  bool given_up() const { return given_up_; }
  std::chrono::milliseconds window() const { return window_; }
  std::chrono::seconds grace() const { return grace_; }

 private:
  std::chrono::milliseconds window_{0};
  std::chrono::seconds grace_{0};
  bool armed_ = false;
  bool confirmed_ = false;
  bool given_up_ = false;
  Clock::time_point deadline_ = Clock::time_point::max();
};

}  // namespace podrun::agent
