// The gang state machine.
#include "launcher/attempt/gang.h"

#include <stdexcept>

namespace podrun {

Gang::Gang(std::vector<int> workers, OnFailure policy)
    : workers_(std::move(workers)), policy_(policy) {
  for (int w : workers_) {
    states_[w] = WorkerState::kPending;
    prepared_[w] = false;
  }
}

void Gang::Prepared(int worker) {
  prepared_.at(worker) = true;
  states_.at(worker) = WorkerState::kPrepared;
}

void Gang::PrepareFailed(int worker, const std::string& reason) {
  states_.at(worker) = WorkerState::kFailed;
  if (!root_cause_) root_cause_ = RootCause{worker, reason};
  phase_ = GangPhase::kAborted;
}

bool Gang::ReadyForGo() const {
  if (phase_ != GangPhase::kPreparing) return false;
  for (const auto& [w, ok] : prepared_) {
    if (!ok) return false;
  }
  return true;
}

void Gang::Go() {
  if (!ReadyForGo()) throw std::logic_error("GO before every worker is prepared");
  phase_ = GangPhase::kRunning;
}

bool Gang::Started(int worker) {
  states_.at(worker) = WorkerState::kRunning;
  if (phase_ != GangPhase::kStopping) return false;
  stopped_by_us_[worker] = true;
  return true;
}

bool Gang::Fail(int worker, const std::string& reason) {
  any_failed_ = true;
  if (!root_cause_) root_cause_ = RootCause{worker, reason};
  if (policy_ == OnFailure::kStopAll && phase_ == GangPhase::kRunning) {
    phase_ = GangPhase::kStopping;
    for (int w : Running()) stopped_by_us_[w] = true;
    return !Running().empty();
  }
  return false;
}

bool Gang::StartFailed(int worker, const std::string& reason) {
  states_.at(worker) = WorkerState::kFailed;
  bool stop = Fail(worker, reason);
  CheckDone();
  return stop;
}

bool Gang::Ended(int worker, bool failed, const std::string& reason, bool stopped_by_request) {
  WorkerState& s = states_.at(worker);
  if (stopped_by_request || stopped_by_us_[worker]) {
    s = WorkerState::kStopped;
    CheckDone();
    return false;
  }
  s = failed ? WorkerState::kFailed : WorkerState::kExited;
  bool stop = failed && Fail(worker, reason);
  CheckDone();
  return stop;
}

bool Gang::Hung(const std::string& reason) {
  any_failed_ = true;
  if (!root_cause_) root_cause_ = RootCause{RootCause::kWholeGang, reason};
  if (phase_ != GangPhase::kRunning) return false;
  phase_ = GangPhase::kStopping;
  for (int w : Running()) stopped_by_us_[w] = true;
  return !Running().empty();
}

bool Gang::Lost(int worker, const std::string& reason) {
  states_.at(worker) = WorkerState::kLost;
  bool stop = Fail(worker, "lost: " + reason);
  CheckDone();
  return stop;
}

bool Gang::Interrupt() {
  if (interrupted_) return false;
  interrupted_ = true;
  if (phase_ == GangPhase::kPreparing) {
    phase_ = GangPhase::kAborted;
    return false;
  }
  if (phase_ != GangPhase::kRunning && phase_ != GangPhase::kStopping) return false;
  phase_ = GangPhase::kStopping;
  for (int w : Running()) stopped_by_us_[w] = true;
  return !Running().empty();
}

std::vector<int> Gang::Running() const {
  std::vector<int> out;
  for (const auto& [w, s] : states_) {
    if (s == WorkerState::kRunning) out.push_back(w);
  }
  return out;
}

std::vector<int> Gang::StoppedByUs() const {
  std::vector<int> out;
  for (const auto& [w, s] : states_) {
    if (s == WorkerState::kStopped) out.push_back(w);
  }
  return out;
}

void Gang::CheckDone() {
  if (phase_ != GangPhase::kRunning && phase_ != GangPhase::kStopping) return;
  for (const auto& [w, s] : states_) {
    if (s == WorkerState::kRunning || s == WorkerState::kPrepared || s == WorkerState::kPending) {
      return;
    }
  }
  phase_ = GangPhase::kDone;
}

ExitCode Gang::Outcome() const {
  if (interrupted_) return ExitCode::kInterrupted;
  if (phase_ == GangPhase::kAborted) return ExitCode::kUnreachable;
  if (any_failed_) return ExitCode::kFailed;
  std::vector<WorkerState> states;
  for (const auto& [w, s] : states_) states.push_back(s);
  // A worker still running here was never started or never ended: not a success either.
  for (WorkerState s : states) {
    if (s != WorkerState::kExited && s != WorkerState::kStopped) return ExitCode::kFailed;
  }
  return EndedAttemptState(states) == AttemptState::kSucceeded ? ExitCode::kOk : ExitCode::kFailed;
}

}  // namespace podrun
