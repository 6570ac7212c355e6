// The line an agent announces itself with on stdout (docs/design.md, the agent bootstrap), and
// what else it may print there: outside bytes, parsed strictly (fuzz/announcement_fuzz.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace podrun {

// What the start command prints when the worker lacks this agent binary.
inline constexpr std::string_view kAgentMissing = "PODRUN-AGENT MISSING";

// "PODRUN-AGENT READY <protocol> <version> <socket>", parsed.
struct AgentAnnouncement {
  uint32_t protocol_version = 0;
  std::string agent_version;
  std::string socket_path;
};

// Finds the announcement in the agent's stdout. Returns nullopt when there is none; throws
// Error(kUnreachable) with the agent's reason for a "PODRUN-AGENT ERROR <reason>" line.
// Lines that are neither are appended to *other (for the user to see).
std::optional<AgentAnnouncement> ParseAnnouncement(std::string_view output, std::string* other);

}  // namespace podrun
