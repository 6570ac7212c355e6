// Writing a whole buffer to a file descriptor: shared by the launcher and the agent.
#pragma once

#include <span>
#include <string_view>

namespace podrun {

// Writes all of `data` to `fd`, retrying on EINTR and short writes (blocking fds; a
// non-blocking fd that would block counts as an error). Returns false on error, errno set.
bool WriteAll(int fd, std::string_view data);

// Writes the pieces in order as one stream, with as few writes as the kernel allows (writev,
// at most IOV_MAX pieces each). The same rules as WriteAll.
bool WriteAllOf(int fd, std::span<const std::string_view> pieces);

}  // namespace podrun
