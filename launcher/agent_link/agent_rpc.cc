// The one place gRPC statuses become podrun errors, and the message conversions the agent's
// clients share (see agent_rpc.h).
#include "launcher/agent_link/agent_rpc.h"

#include <string>

#include "launcher/agent_link/agent_refusal.h"
#include "launcher/base/error.h"

namespace podrun::agent_rpc {

namespace {

std::string CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "code " + std::to_string(static_cast<int>(code));
  }
}

// True for the codes of an agent that answered and said no: another connection cannot help.
bool IsRefusal(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
    case grpc::StatusCode::UNIMPLEMENTED:
      return true;
    default:
      return false;
  }
}

}  // namespace

void Check(const grpc::Status& status, const char* rpc) {
  if (status.ok()) return;
  const std::string message = std::string("agent ") + rpc + ": " + CodeName(status.error_code()) +
                              ": " + status.error_message();
  if (IsRefusal(status.error_code())) {
    throw AgentRefusal(message, status.error_code() == grpc::StatusCode::NOT_FOUND
                                    ? AgentRefusal::Kind::kNotFound
                                    : AgentRefusal::Kind::kOther);
  }
  throw Error(ExitCode::kUnreachable, message);
}

ProcessEnd FromProto(const v1::ProcessEnd& end) {
  ProcessEnd out;
  if (end.outcome_case() == v1::ProcessEnd::kExitCode) out.exit_code = end.exit_code();
  if (end.outcome_case() == v1::ProcessEnd::kSignal) out.signal = end.signal();
  out.end_time_ns = end.end_time_ns();
  out.stopped_by_request = end.stopped_by_request();
  out.never_started = end.never_started();
  out.lost = end.lost();
  out.start_unconfirmed = end.start_unconfirmed();
  return out;
}

std::optional<AgentLogGap> GapFromProto(bool has, const v1::LogGap& gap) {
  if (!has || (gap.bytes() == 0 && gap.chunks() == 0)) return std::nullopt;
  return AgentLogGap{gap.from_seq(), gap.bytes(), gap.chunks(), gap.cause()};
}

}  // namespace podrun::agent_rpc
