// Probing a connection's end (see connection_probe.h).
#include "launcher/ssh/connection_probe.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace podrun {
namespace {

bool IsResetErrno(int error) {
  return error == ECONNRESET || error == ECONNABORTED || error == EPIPE || error == ECONNREFUSED ||
         error == ETIMEDOUT;
}

}  // namespace

ConnectionEnd ProbeConnection(int fd) {
  if (fd < 0) return ConnectionEnd::kOpen;
  int error = 0;
  socklen_t length = sizeof error;
  bool is_socket = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0;
  if (is_socket && IsResetErrno(error)) return ConnectionEnd::kReset;
  if (is_socket) {
    char byte;
    ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return ConnectionEnd::kClosedByPeer;
    if (n < 0 && IsResetErrno(errno)) return ConnectionEnd::kReset;
    return ConnectionEnd::kOpen;
  }
  // A pipe (ProxyCommand): hung up with nothing left to read is the peer's end.
  pollfd pfd{fd, POLLIN, 0};
  if (::poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP) && !(pfd.revents & POLLIN)) {
    return ConnectionEnd::kClosedByPeer;
  }
  return ConnectionEnd::kOpen;
}

}  // namespace podrun
