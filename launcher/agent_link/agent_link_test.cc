// Tests of the SSH AgentLink without a real sshd: what its lock lets through while a connect
// is stuck on a worker that does not answer.
#include "launcher/agent_link/agent_link.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "launcher/base/error.h"

namespace podrun {
namespace {

// A TCP listener on 127.0.0.1 whose connections get nothing until the test writes to them.
class SilentServer {
 public:
  SilentServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(0, ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address));
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(0, ::listen(fd_, 4));
  }
  ~SilentServer() { ::close(fd_); }
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  int port() const { return port_; }
  // Blocks until a client connects; returns its socket.
  int Accept() { return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

SshOptions TestOptions(std::chrono::milliseconds timeout) {
  SshOptions o;
  std::string config = ::testing::TempDir() + "/agent-link-test-config";
  std::ofstream(config) << "# empty\n";
  o.ssh_config = config;
  o.known_hosts = ::testing::TempDir() + "/agent-link-test-known-hosts";
  o.connect_timeout = timeout;
  return o;
}

// A connect that waits for the worker's banner holds the link's connect lock, not the lock of
// its state: peer_address() answers meanwhile. Only then does the server answer, with a banner of
// another protocol version, which fails the connect at once: the connect was still waiting when
// peer_address() returned. (Before, peer_address() waited for the connect to time out, and the
// connect failed with "timed out", the banner coming too late.)
TEST(SshAgentLink, PeerAddressAnswersWhileAConnectWaitsForTheWorker) {
  SilentServer server;
  EventLoop loop;
  FanOutWindow window(loop.executor(), 4);
  AgentLinkContext ctx;
  ctx.loop = &loop;
  ctx.window = &window;
  PodWorker worker;
  worker.index = 3;
  worker.host = HostSpec{"me", "127.0.0.1", server.port()};
  // Long enough that only the server's answer ends the connect while the test looks.
  auto link = MakeSshAgentLink(worker, TestOptions(std::chrono::seconds(30)), ctx);

  std::atomic<bool> connect_ended{false};
  std::string connect_error;
  std::thread connecting([&] {
    try {
      link->Connect();
    } catch (const Error& e) {
      connect_error = e.what();
    }
    connect_ended = true;
  });
  const int client = server.Accept();  // the connect is under way, waiting for the banner
  ASSERT_GE(client, 0);
  EXPECT_EQ(link->peer_address(), "127.0.0.1");
  EXPECT_FALSE(connect_ended) << "peer_address() waited for the connect: " << connect_error;

  const std::string banner = "SSH-1.5-OldServer\r\n";
  (void)::send(client, banner.data(), banner.size(), MSG_NOSIGNAL);
  connecting.join();
  ::close(client);
  // Ended by that banner, not by the timeout; the error names the worker (Connect's context).
  EXPECT_NE(connect_error.find("handshake failed"), std::string::npos) << connect_error;
  EXPECT_EQ(connect_error.find("timed out"), std::string::npos) << connect_error;
  EXPECT_EQ(connect_error.rfind("w3 (me@127.0.0.1:", 0), 0u) << connect_error;
}

}  // namespace
}  // namespace podrun
