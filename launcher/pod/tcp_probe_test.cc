#include "launcher/pod/tcp_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "proto/unique_fd.h"

namespace podrun {
namespace {

// A listening socket on a free loopback port; returns its port.
uint16_t Listen(UniqueFd* fd) {
  fd->reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(0, ::bind(fd->get(), reinterpret_cast<sockaddr*>(&a), sizeof a));
  EXPECT_EQ(0, ::listen(fd->get(), 4));
  socklen_t size = sizeof a;
  ::getsockname(fd->get(), reinterpret_cast<sockaddr*>(&a), &size);
  return ntohs(a.sin_port);
}

TEST(TcpProbeTest, TellsListeningFromRefusedAndLeavesNamesAlone) {
  UniqueFd listening, closed;
  const uint16_t port = Listen(&listening);
  const uint16_t other = Listen(&closed);
  closed.reset();  // nothing listens there any more: refused
  auto results =
      ProbeTcp({"127.0.0.1", "::1", "worker-0.internal"}, port, std::chrono::milliseconds(2000));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0], ProbeResult::kReachable);
  EXPECT_EQ(results[1], ProbeResult::kUnreachable);  // listening on IPv4 loopback only
  EXPECT_EQ(results[2], ProbeResult::kUnknown);
  EXPECT_EQ(ProbeTcp({"127.0.0.1"}, other, std::chrono::milliseconds(2000))[0],
            ProbeResult::kUnreachable);
}

}  // namespace
}  // namespace podrun
