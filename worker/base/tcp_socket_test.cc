// Tests of the TCP helpers' listeners: bound to exactly the address given (the worker's pod
// address), never to every interface (docs/design.md decision 15).
#include "worker/base/tcp_socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

// Whether a TCP connection to host:port is accepted (a listener there).
bool Accepts(const std::string& host, uint16_t port) {
  try {
    return static_cast<bool>(Connect(ParseAddress(host, port), std::chrono::seconds(2)));
  } catch (const AgentError&) {
    return false;
  }
}

TEST(TcpSocketTest, AListenerIsBoundToTheGivenAddressNotTheWildcard) {
  uint16_t port = 0;
  UniqueFd fd = Listen("127.0.0.2", &port);
  ASSERT_TRUE(fd);
  EXPECT_NE(0, port);
  EXPECT_EQ("127.0.0.2", BoundAddress(fd.get()));
  sockaddr_in bound{};
  socklen_t size = sizeof bound;
  ASSERT_EQ(0, ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &size));
  EXPECT_NE(htonl(INADDR_ANY), bound.sin_addr.s_addr);
  // Reachable on that address only: another of this machine's addresses finds nobody there.
  EXPECT_TRUE(Accepts("127.0.0.2", port));
  EXPECT_FALSE(Accepts("127.0.0.1", port));
}

TEST(TcpSocketTest, TheWildcardIsRefused) {
  for (const std::string wildcard : {"0.0.0.0", "::"}) {
    uint16_t port = 0;
    try {
      Listen(wildcard, &port);
      ADD_FAILURE() << "listened on " << wildcard;
    } catch (const AgentError& e) {
      EXPECT_EQ(ErrorKind::kInvalidArgument, e.kind());
      EXPECT_NE(std::string(e.what()).find("listen on " + wildcard), std::string::npos) << e.what();
    }
  }
}

TEST(TcpSocketTest, AnAddressThisMachineLacksIsRefusedNamingIt) {
  uint16_t port = 0;
  try {
    Listen("192.0.2.1", &port);  // TEST-NET-1: nobody's
    ADD_FAILURE() << "listened on 192.0.2.1";
  } catch (const AgentError& e) {
    EXPECT_EQ(ErrorKind::kFailedPrecondition, e.kind());
    EXPECT_NE(std::string(e.what()).find("192.0.2.1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not an address of this worker"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace podrun::agent
