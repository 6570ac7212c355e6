// `podrun-agent dial-stdio`: a byte pipe between stdio and the agent's unix socket, for SSH
// servers that refuse stream-local forwarding (the launcher runs it in an exec channel).
#pragma once

#include <filesystem>

namespace podrun::agent {

// Connects to `socket_path` and copies stdin → socket and socket → stdout until the socket
// side has closed and everything it sent is written (stdin EOF half-closes the socket).
// Returns the exit code: 0 on a clean end, 1 on errors (reported on stderr).
int DialStdio(const std::filesystem::path& socket_path);

}  // namespace podrun::agent
