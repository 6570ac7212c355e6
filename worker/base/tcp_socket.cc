// TCP helpers (see tcp_socket.h).
#include "worker/base/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string HostPort(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

SocketAddress ParseAddress(const std::string& host, uint16_t port) {
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    address.size = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    address.size = sizeof *v6;
  } else {
    throw AgentError(ErrorKind::kInvalidArgument, "not a numeric IP address: " + host);
  }
  return address;
}

// A non-blocking connect bounded by `timeout`; returns a blocking socket.
UniqueFd Connect(const SocketAddress& address, std::chrono::seconds timeout) {
  auto fail = [](const std::string& what) {
    throw AgentError(ErrorKind::kFailedPrecondition, "connect: " + what);
  };
  UniqueFd fd(::socket(address.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) fail(ErrnoMessage());
  if (::connect(fd.get(), address.get(), address.size) != 0) {
    if (errno != EINPROGRESS) fail(ErrnoMessage());
    const auto deadline = Clock::now() + timeout;
    pollfd p{fd.get(), POLLOUT, 0};
    for (;;) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      const int rc = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
      if (rc > 0) break;
      if (rc == 0) fail("timed out after " + std::to_string(timeout.count()) + "s");
      if (errno != EINTR) fail(ErrnoMessage());
    }
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
    if (error != 0) fail(std::strerror(error));
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK) != 0) fail(ErrnoMessage());
  return fd;
}

UniqueFd Listen(const std::string& address, uint16_t* port) {
  const SocketAddress local = ParseAddress(address, 0);
  const bool wildcard =
      local.storage.ss_family == AF_INET
          ? reinterpret_cast<const sockaddr_in*>(&local.storage)->sin_addr.s_addr == INADDR_ANY
          : IN6_IS_ADDR_UNSPECIFIED(
                &reinterpret_cast<const sockaddr_in6*>(&local.storage)->sin6_addr);
  if (wildcard) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "listen on " + address +
                         ": refused, a relay listener binds the worker's pod address, never "
                         "every interface");
  }
  UniqueFd fd(::socket(local.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) throw AgentError(ErrorKind::kInternal, "listen on " + address + ": " + ErrnoMessage());
  if (::bind(fd.get(), local.get(), local.size) != 0) {
    const int err = errno;
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "listen on " + address + ": " + ErrnoMessage({}, err) +
                         (err == EADDRNOTAVAIL ? " (not an address of this worker)" : ""));
  }
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  if (::listen(fd.get(), 16) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
    throw AgentError(ErrorKind::kInternal, "listen on " + address + ": " + ErrnoMessage());
  }
  *port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

std::string BoundAddress(int fd) {
  sockaddr_storage bound{};
  socklen_t size = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      bound.ss_family == AF_INET6
          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&bound)->sin6_addr)
          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&bound)->sin_addr);
  return ::inet_ntop(bound.ss_family, raw, text, sizeof text) ? text : "";
}

}  // namespace podrun::agent
