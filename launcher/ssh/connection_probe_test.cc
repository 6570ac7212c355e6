// Tests of telling a connection the peer ended from a live one, by errno.
#include "launcher/ssh/connection_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace podrun {
namespace {

TEST(ConnectionProbe, LiveSocketIsOpenEvenWithUnreadData) {
  int fds[2];
  ASSERT_EQ(0, ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds));
  EXPECT_EQ(ConnectionEnd::kOpen, ProbeConnection(fds[0]));
  ASSERT_EQ(1, ::write(fds[1], "x", 1));
  EXPECT_EQ(ConnectionEnd::kOpen, ProbeConnection(fds[0]));
  char c;
  ASSERT_EQ(1, ::read(fds[0], &c, 1));  // the probe consumed nothing
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(ConnectionProbe, PeerThatClosedIsClosedByPeer) {
  int fds[2];
  ASSERT_EQ(0, ::socketpair(AF_UNIX, SOCK_STREAM, 0, fds));
  ::close(fds[1]);
  EXPECT_EQ(ConnectionEnd::kClosedByPeer, ProbeConnection(fds[0]));
  ::close(fds[0]);
}

TEST(ConnectionProbe, TcpResetIsReset) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(0, ::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address));
  socklen_t length = sizeof address;
  ASSERT_EQ(0, ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length));
  ASSERT_EQ(0, ::listen(listener, 1));
  int client = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(0, ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof address));
  int server = ::accept(listener, nullptr, nullptr);
  ASSERT_GE(server, 0);
  linger abort{1, 0};  // close sends RST
  ASSERT_EQ(0, ::setsockopt(server, SOL_SOCKET, SO_LINGER, &abort, sizeof abort));
  ::close(server);
  ::usleep(50'000);  // let the RST arrive over loopback
  EXPECT_EQ(ConnectionEnd::kReset, ProbeConnection(client));
  ::close(client);
  ::close(listener);
}

TEST(ConnectionProbe, PipeWhoseWriterIsGoneIsClosedByPeer) {
  int fds[2];
  ASSERT_EQ(0, ::pipe(fds));
  EXPECT_EQ(ConnectionEnd::kOpen, ProbeConnection(fds[0]));
  ::close(fds[1]);
  EXPECT_EQ(ConnectionEnd::kClosedByPeer, ProbeConnection(fds[0]));
  ::close(fds[0]);
  EXPECT_EQ(ConnectionEnd::kOpen, ProbeConnection(-1));
}

}  // namespace
}  // namespace podrun
