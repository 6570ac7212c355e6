// The agent's RPC bookkeeping: activity, and errors as gRPC statuses.
#include "worker/rpc/rpc_call.h"

namespace podrun::agent {

using Clock = std::chrono::steady_clock;

ActivityTracker::ActivityTracker() : last_(Clock::now()) {}

void ActivityTracker::RpcBegan() {
  std::lock_guard lock(mu_);
  ++in_flight_;
}

void ActivityTracker::RpcEnded() {
  std::lock_guard lock(mu_);
  --in_flight_;
  last_ = Clock::now();
}

Clock::duration ActivityTracker::IdleFor() const {
  std::lock_guard lock(mu_);
  return in_flight_ > 0 ? Clock::duration::zero() : Clock::now() - last_;
}

grpc::StatusCode ToStatusCode(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorKind::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

}  // namespace podrun::agent
