// See tcp_probe.h.
#include "launcher/pod/tcp_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "proto/unique_fd.h"

namespace podrun {
namespace {

// Starts a non-blocking connect to `host`:`port`; an invalid fd when `host` is not an IP
// literal (`*result` kUnknown) or the connect failed at once (kUnreachable).
UniqueFd StartConnect(const std::string& host, uint16_t port, ProbeResult* result) {
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (::inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof *v4;
  } else if (::inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof *v6;
  } else {
    *result = ProbeResult::kUnknown;
    return UniqueFd();
  }
  UniqueFd fd(::socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    *result = ProbeResult::kUnknown;  // out of fds: no verdict
    return fd;
  }
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), length) == 0) {
    *result = ProbeResult::kReachable;
    return UniqueFd();
  }
  if (errno != EINPROGRESS) {
    *result = ProbeResult::kUnreachable;
    return UniqueFd();
  }
  return fd;
}

}  // namespace

std::vector<ProbeResult> ProbeTcp(const std::vector<std::string>& hosts, uint16_t port,
                                  std::chrono::milliseconds timeout) {
  std::vector<ProbeResult> results(hosts.size(), ProbeResult::kUnreachable);
  std::vector<UniqueFd> fds;
  std::vector<size_t> which;  // fds[k] probes hosts[which[k]]
  for (size_t i = 0; i < hosts.size(); ++i) {
    UniqueFd fd = StartConnect(hosts[i], port, &results[i]);
    if (!fd) continue;
    which.push_back(i);
    fds.push_back(std::move(fd));
  }
  std::vector<pollfd> polls;
  for (const UniqueFd& fd : fds) polls.push_back({fd.get(), POLLOUT, 0});
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t open = polls.size();
  while (open > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    const int n = ::poll(polls.data(), polls.size(), static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (size_t k = 0; k < polls.size(); ++k) {
      if (polls[k].fd < 0 || polls[k].revents == 0) continue;
      int error = 0;
      socklen_t size = sizeof error;
      ::getsockopt(polls[k].fd, SOL_SOCKET, SO_ERROR, &error, &size);
      results[which[k]] = error == 0 ? ProbeResult::kReachable : ProbeResult::kUnreachable;
      polls[k].fd = -1;  // poll ignores it from now on
      --open;
    }
  }
  return results;  // those still open: no answer within the timeout, kUnreachable
}

}  // namespace podrun
