// Tests of SshSession's connect path without a real sshd: which failures are retried (a
// server that drops connections before its banner, as an sshd past MaxStartups does) and
// which fail at once (a server that answers with something that is not SSH).
#include "launcher/ssh/ssh_session.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "launcher/base/error.h"
#include "launcher/ssh/event_loop.h"

namespace podrun {
namespace {

// A TCP server on 127.0.0.1 that answers every connection with `reply` and closes it after
// `hold`.
class FakeServer {
 public:
  explicit FakeServer(std::string reply,
                      std::chrono::milliseconds hold = std::chrono::milliseconds(20))
      : reply_(std::move(reply)), hold_(hold) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(0, ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address));
    socklen_t length = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    EXPECT_EQ(0, ::listen(fd_, 16));
    thread_ = std::thread([this] {
      for (;;) {
        int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;  // shut down
        ++accepted_;
        if (!reply_.empty()) (void)!::write(client, reply_.data(), reply_.size());
        std::this_thread::sleep_for(hold_);
        ::close(client);
      }
    });
  }
  ~FakeServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_; }

 private:
  std::string reply_;
  std::chrono::milliseconds hold_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

SshOptions TestOptions(std::chrono::milliseconds timeout) {
  SshOptions o;
  std::string config = ::testing::TempDir() + "/ssh-session-test-config";
  std::ofstream(config) << "# empty\n";
  o.ssh_config = config;
  o.known_hosts = ::testing::TempDir() + "/ssh-session-test-known-hosts";
  o.connect_timeout = timeout;
  return o;
}

// The error of connecting to 127.0.0.1:`port`, and how long it took.
std::pair<std::string, std::chrono::milliseconds> ConnectError(int port,
                                                               std::chrono::milliseconds timeout) {
  EventLoop loop;
  auto start = std::chrono::steady_clock::now();
  std::string error;
  try {
    loop.Run(SshSession::Connect(HostSpec{"me", "127.0.0.1", port}, TestOptions(timeout)));
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    error = e.what();
  }
  return {error, std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)};
}

TEST(SshSessionConnect, ConnectionsDroppedBeforeTheBannerAreRetried) {
  FakeServer server("");  // accepts, says nothing, closes
  auto [error, took] = ConnectError(server.port(), std::chrono::seconds(2));
  EXPECT_NE(std::string::npos, error.find("gave up after")) << error;
  EXPECT_GE(server.accepted(), 2) << error;  // tried again
}

TEST(SshSessionConnect, AServerOfAnotherProtocolVersionFailsAtOnce) {
  // It answers (an SSH-1 banner) and keeps the connection up: trying again cannot help.
  FakeServer server("SSH-1.5-OldServer\r\n", std::chrono::seconds(3));
  auto [error, took] = ConnectError(server.port(), std::chrono::seconds(20));
  EXPECT_NE(std::string::npos, error.find("handshake failed")) << error;
  EXPECT_EQ(std::string::npos, error.find("gave up after")) << error;
  EXPECT_EQ(1, server.accepted()) << error;
  EXPECT_LT(took, std::chrono::seconds(10)) << error;  // not retried until the deadline
}

TEST(SshSessionConnect, RefusedPortIsRetriedThenNamed) {
  int port;
  {
    FakeServer gone("");  // a port that was just free
    port = gone.port();
  }
  auto [error, took] = ConnectError(port, std::chrono::milliseconds(800));
  EXPECT_NE(std::string::npos, error.find("127.0.0.1:" + std::to_string(port))) << error;
  EXPECT_NE(std::string::npos, error.find("gave up after")) << error;
}

}  // namespace
}  // namespace podrun
