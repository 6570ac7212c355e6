// TCP sockets between workers, shared by the peer link and the agent binary relay: numeric
// addresses only (the pod's internal addresses are numbers, and the static agent has no NSS to
// resolve names with), bounded connects, listeners on an ephemeral port. Throw AgentError.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "proto/unique_fd.h"

namespace podrun::agent {

// "host:port", or "[v6]:port".
std::string HostPort(const std::string& host, uint16_t port);

// A numeric IPv4 or IPv6 address with a port.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t size = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// Throws AgentError(kInvalidArgument) for anything but a numeric address.
SocketAddress ParseAddress(const std::string& host, uint16_t port);

// A non-blocking connect bounded by `timeout`; returns a blocking socket.
UniqueFd Connect(const SocketAddress& address, std::chrono::seconds timeout);

// A non-blocking listening socket on address:0; *port is the port it got. `address` must be one
// of this machine's own (the worker's pod address, docs/design.md decision 15): a wildcard
// (0.0.0.0, ::) is refused (kInvalidArgument), and an address this machine does not have fails
// to bind (kFailedPrecondition, the address named); nothing ever listens on every interface.
UniqueFd Listen(const std::string& address, uint16_t* port);

// The numeric address a socket is bound to ("10.0.0.2", "::1"); "" if it cannot be read.
std::string BoundAddress(int fd);

}  // namespace podrun::agent
