// Unix stream sockets by path, for the supervisors' sockets (supervisor.h).
#pragma once

#include <filesystem>

#include "proto/unique_fd.h"

namespace podrun::agent {

// Listens (non-blocking, close-on-exec, mode per umask) on `path`, replacing a stale socket
// file. Throws std::runtime_error naming the path.
UniqueFd ListenUnix(const std::filesystem::path& path);

// Connects (blocking, close-on-exec) to `path`; an invalid UniqueFd if nobody listens there.
UniqueFd ConnectUnix(const std::filesystem::path& path);

}  // namespace podrun::agent
