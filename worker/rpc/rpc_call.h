// How the agent's RPC bodies run: each is one unit of activity (ActivityTracker: an idle agent
// exits by itself) and its exceptions become gRPC statuses (AgentError's kind mapped to a code,
// anything else INTERNAL).
#pragma once

#include <grpcpp/support/status.h>

#include <chrono>
#include <exception>
#include <mutex>

#include "worker/base/agent_error.h"

namespace podrun::agent {

// Counts RPCs in flight and remembers when the last one ended. Thread-safe.
class ActivityTracker {
 public:
  ActivityTracker();
  void RpcBegan();
  void RpcEnded();
  // Time since the last RPC ended, or zero while one is in flight.
  std::chrono::steady_clock::duration IdleFor() const;

 private:
  mutable std::mutex mu_;
  int in_flight_ = 0;
  std::chrono::steady_clock::time_point last_;
};

// The gRPC code of an AgentError's kind.
grpc::StatusCode ToStatusCode(ErrorKind kind);

// Runs an RPC's body (returning its status) as one unit of activity, mapping its exceptions to
// statuses.
template <typename Body>
grpc::Status HandleRpc(ActivityTracker& activity, Body&& body) {
  activity.RpcBegan();
  grpc::Status status;
  try {
    status = body();
  } catch (const AgentError& e) {
    status = grpc::Status(ToStatusCode(e.kind()), e.what());
  } catch (const std::exception& e) {
    status = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
  activity.RpcEnded();
  return status;
}

}  // namespace podrun::agent
