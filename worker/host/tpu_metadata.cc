// The GCE metadata server, for the TPU worker number (see tpu_metadata.h).
#include "worker/host/tpu_metadata.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kMetadataTimeout = std::chrono::milliseconds(500);

int MsLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

}  // namespace

std::optional<std::string> MetadataGet(const std::string& address, int port,
                                       const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) return std::nullopt;
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return std::nullopt;
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return std::nullopt;
    pollfd p{fd.get(), POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, MsLeft(deadline)) != 1 ||
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      return std::nullopt;
    }
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: metadata.google.internal\r\n" +
                              "Metadata-Flavor: Google\r\nConnection: close\r\n\r\n";
  if (::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return std::nullopt;
  }
  std::string response;
  char buf[4096];
  while (response.size() < 65536) {
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, MsLeft(deadline)) != 1) return std::nullopt;
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    response.append(buf, static_cast<size_t>(n));
  }
  // "HTTP/1.x 200 ..." then headers, a blank line and the body.
  if (response.compare(0, 5, "HTTP/") != 0) return std::nullopt;
  const auto space = response.find(' ');
  if (space == std::string::npos || response.compare(space + 1, 3, "200") != 0) return std::nullopt;
  const auto body = response.find("\r\n\r\n");
  if (body == std::string::npos) return std::nullopt;
  return response.substr(body + 4);
}

namespace {
std::atomic<int> known_number{-1};  // set once the metadata server answered with a number
}  // namespace

std::optional<int> TpuWorkerNumberIfKnown() {
  const int n = known_number.load();
  return n >= 0 ? std::optional<int>(n) : std::nullopt;
}

std::optional<int> TpuWorkerNumber() {
  static std::once_flag once;
  static std::optional<int> number;
  std::call_once(once, [] {
    auto text = MetadataGet(kMetadataAddress, kMetadataPort,
                            "/computeMetadata/v1/instance/attributes/agent-worker-number",
                            kMetadataTimeout);
    if (!text) return;
    try {
      size_t used = 0;
      const int value = std::stoi(*text, &used);
      if (value >= 0) {
        number = value;
        known_number = value;
      }
    } catch (const std::exception&) {
    }
  });
  return number;
}

}  // namespace podrun::agent
