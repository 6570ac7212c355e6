// What agent_client.cc and agent_client_logs.cc share: the generated stub, the one place
// gRPC statuses become podrun errors, deadlines, and the conversions both need. Not for
// other files.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>

#include "launcher/agent_link/agent_client.h"
#include "proto/agent.grpc.pb.h"

namespace podrun {

namespace v1 = agent::v1;

struct AgentClient::Stub {
  std::unique_ptr<v1::Agent::Stub> stub;
};

namespace agent_client_internal {

// Throws AgentRefusal when the agent refused, Error(kUnreachable) when the transport failed:
// "agent <rpc>: <gRPC code>: <detail>".
void Check(const grpc::Status& status, const char* rpc);

template <typename Duration>
void SetTimeout(grpc::ClientContext& ctx, Duration timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

ProcessEnd FromProto(const v1::ProcessEnd& end);
std::optional<AgentLogGap> GapFromProto(bool has, const v1::LogGap& gap);

}  // namespace agent_client_internal
}  // namespace podrun
