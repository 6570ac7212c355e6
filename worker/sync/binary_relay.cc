// The agent binary relay's server (see binary_relay.h).
#include "worker/sync/binary_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>

#include "proto/protocol_version.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/base/tcp_socket.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxAtOnce = 8;
constexpr std::chrono::seconds kClientTimeout{10};
constexpr std::chrono::seconds kIdleExit{10};

// Constant-time comparison: how long it takes says nothing about the token.
bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Reads the client's first line (at most 128 bytes).
bool ReadLine(int fd, std::string* line) {
  char c;
  while (line->size() < 128) {
    const ssize_t n = ::recv(fd, &c, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    *line += c;
  }
  return false;
}

void Serve(UniqueFd client, int binary, off_t size, const std::string& token) {
  const timeval tv{kClientTimeout.count(), 0};
  ::setsockopt(client.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(client.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string line;
  if (!ReadLine(client.get(), &line) || !SameToken(line, token)) return;
  off_t offset = 0;
  while (offset < size) {
    const ssize_t n = ::sendfile(client.get(), binary, &offset, static_cast<size_t>(size - offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
  ::shutdown(client.get(), SHUT_WR);
}

}  // namespace

int Lend(const LendArgs& args) {
  std::string token;
  if (!std::getline(std::cin, token) || token.size() < 32) {
    std::fprintf(stderr, "podrun-agent lend: no token on stdin\n");
    return 2;
  }
  UniqueFd binary(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!binary || ::fstat(binary.get(), &st) != 0) {
    std::fprintf(stderr, "podrun-agent lend: /proc/self/exe: %s\n", std::strerror(errno));
    return 1;
  }
  UniqueFd listener;
  uint16_t port = 0;
  try {
    try {
      listener = Listen(args.address, &port);
    } catch (const AgentError&) {
      listener = Listen("0.0.0.0", &port);  // not an address of this machine (NAT, a name)
    }
  } catch (const AgentError& e) {
    std::fprintf(stderr, "podrun-agent lend: %s\n", e.what());
    return 1;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    std::fprintf(stderr, "podrun-agent lend: fork: %s\n", std::strerror(errno));
    return 1;
  }
  if (child > 0) {
    // Announced only once the server exists: the launcher may hand the port out at once.
    std::printf("%s %u\n", kServingPrefix, port);
    std::fflush(stdout);
    return 0;
  }
  ::setsid();
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  const auto deadline = Clock::now() + args.lifetime;
  auto idle_since = Clock::now();
  std::atomic<int> running{0};
  int served = 0;
  // Ends at its deadline, after max_clients, or once nobody came for kIdleExit: the workers
  // that wanted the binary fetch it at once.
  while (Clock::now() < deadline && served < args.max_clients &&
         (running.load() > 0 || Clock::now() - idle_since < kIdleExit)) {
    if (running.load() > 0) idle_since = Clock::now();
    pollfd p{listener.get(), POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min<Clock::duration>(deadline - Clock::now(), std::chrono::milliseconds(500)));
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) continue;
    UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) continue;
    const int flags = ::fcntl(client.get(), F_GETFL);
    ::fcntl(client.get(), F_SETFL, flags & ~O_NONBLOCK);
    while (running.load() >= kMaxAtOnce) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++running;
    ++served;
    std::thread([fd = std::move(client), &running, &binary, &st, &token]() mutable {
      Serve(std::move(fd), binary.get(), st.st_size, token);
      --running;
    }).detach();
  }
  listener.reset();
  while (running.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::_exit(0);
}

}  // namespace podrun::agent
