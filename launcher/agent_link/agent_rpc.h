// What the launcher's gRPC clients of an agent share (AgentClient, AgentLogReader,
// AgentSyncClient): the generated stub, the one place gRPC statuses become podrun errors,
// deadlines, and the conversions of messages more than one of them reads. Only for those three.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <optional>

#include "launcher/agent_link/agent_log_reader.h"
#include "proto/agent.grpc.pb.h"
#include "proto/process_end.h"

namespace podrun {

namespace v1 = agent::v1;

namespace agent_rpc {

// Throws AgentRefusal when the agent refused, Error(kUnreachable) when the transport failed:
// "agent <rpc>: <gRPC code>: <detail>".
void Check(const grpc::Status& status, const char* rpc);

template <typename Duration>
void SetTimeout(grpc::ClientContext& ctx, Duration timeout) {
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
}

ProcessEnd FromProto(const v1::ProcessEnd& end);
std::optional<AgentLogGap> GapFromProto(bool has, const v1::LogGap& gap);

}  // namespace agent_rpc
}  // namespace podrun
