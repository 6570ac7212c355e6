// See agent_announcement.h.
#include "launcher/agent_link/agent_announcement.h"

#include <fmt/format.h>

#include <sstream>

#include "launcher/base/error.h"
#include "proto/protocol_version.h"

namespace podrun {

std::optional<AgentAnnouncement> ParseAnnouncement(std::string_view output, std::string* other) {
  std::istringstream in{std::string(output)};
  std::optional<AgentAnnouncement> found;
  std::string ready = std::string(kReadyPrefix) + " ";
  std::string error = std::string(kErrorPrefix);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(ready, 0) == 0) {
      std::istringstream fields(line.substr(ready.size()));
      AgentAnnouncement a;
      if (!(fields >> a.protocol_version >> a.agent_version >> a.socket_path)) {
        throw Error(ExitCode::kUnreachable, fmt::format("malformed agent announcement '{}'", line));
      }
      found = a;
    } else if (line.rfind(error, 0) == 0) {
      std::string reason = line.substr(error.size());
      if (!reason.empty() && reason[0] == ' ') reason.erase(0, 1);
      throw Error(ExitCode::kUnreachable, fmt::format("agent failed to start: {}", reason));
    } else if (other != nullptr && line != kAgentMissing) {
      *other += line + "\n";
    }
  }
  return found;
}

}  // namespace podrun
