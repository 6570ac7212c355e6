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

// A non-blocking listening socket on address:0; *port is the port it got.
UniqueFd Listen(const std::string& address, uint16_t* port);

}  // namespace podrun::agent
