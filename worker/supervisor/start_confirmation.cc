// The confirmation window of a job's start (see start_confirmation.h).
#include "worker/supervisor/start_confirmation.h"

namespace podrun::agent {

void StartConfirmation::Require(std::chrono::milliseconds window, std::chrono::seconds grace) {
  if (armed_ || window.count() <= 0) return;
  window_ = window;
  grace_ = grace;
}

void StartConfirmation::Arm(Clock::time_point now) {
  if (armed_) return;
  armed_ = true;
  if (required() && !confirmed_) deadline_ = now + window_;
}

bool StartConfirmation::Confirm() {
  if (given_up_) return false;
  confirmed_ = true;
  deadline_ = Clock::time_point::max();
  return true;
}

bool StartConfirmation::Due(Clock::time_point now) {
  if (given_up_ || confirmed_ || !armed_ || !required() || now < deadline_) return false;
  given_up_ = true;
  deadline_ = Clock::time_point::max();
  return true;
}

StartConfirmation::Clock::time_point StartConfirmation::deadline() const { return deadline_; }

}  // namespace podrun::agent
