// The launcher⇄agent protocol version, shared by podrun and podrun-agent.
#pragma once

#include <cstdint>

namespace podrun {

// Bump on any incompatible change to proto/agent.proto; both sides refuse a mismatch.
// Equals podrun.agent.v1.PROTOCOL_VERSION_CURRENT (checked where both are visible).
inline constexpr uint32_t kProtocolVersion = 1;

}  // namespace podrun
