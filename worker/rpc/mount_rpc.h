// The Mount RPC's body: the request's mounts on this worker (mounts.h), run for real.
#pragma once

#include "worker/rpc/agent_proto.h"

namespace podrun::agent {

// Mounts what `request` asks for, filling `reply` with what was done. Throws AgentError
// (kInvalidArgument for a malformed entry, kFailedPrecondition naming the mount and the
// failing command).
void MountForRequest(const v1::MountRequest& request, v1::MountReply* reply);

}  // namespace podrun::agent
