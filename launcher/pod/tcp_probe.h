// A quick check of which addresses accept a TCP connection: used to tell whether a cached
// discovery answer still holds (TPU VMs' external IPs change on maintenance and recreation)
// before the SSH fan-out finds out the slow way.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace podrun {

enum class ProbeResult {
  kReachable,    // the connection was accepted
  kUnreachable,  // refused, no route, or no answer within the timeout
  kUnknown,      // not an IP address (an ssh_config alias, a DNS name): not probed
};

// Connects to every `hosts[i]:port` at once (non-blocking, IPv4 or IPv6 literals only) and
// waits at most `timeout` for all of them; closes each connection at once.
std::vector<ProbeResult> ProbeTcp(const std::vector<std::string>& hosts, uint16_t port,
                                  std::chrono::milliseconds timeout);

}  // namespace podrun
