#include "worker/sync/binary_relay.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "proto/protocol_version.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/base/tcp_socket.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kToken(64, 'k');

// A file of `size` bytes (a repeating pattern; sparse zeros past 1 MiB), opened for reading.
UniqueFd MakeBinary(off_t size) {
  char path[] = "/tmp/podrun-binary-relay-test-XXXXXX";
  UniqueFd fd(::mkstemp(path));
  ::unlink(path);
  std::string head(static_cast<size_t>(std::min<off_t>(size, 1 << 20)), '\0');
  for (size_t i = 0; i < head.size(); ++i) head[i] = static_cast<char>(i * 7 + 3);
  EXPECT_EQ(static_cast<ssize_t>(head.size()), ::write(fd.get(), head.data(), head.size()));
  EXPECT_EQ(0, ::ftruncate(fd.get(), size));
  return fd;
}

std::string Contents(int fd, off_t size) {
  std::string s(static_cast<size_t>(size), '\0');
  EXPECT_EQ(static_cast<ssize_t>(size), ::pread(fd, s.data(), s.size(), 0));
  return s;
}

// ServeBinary on a thread, on 127.0.0.1, with a pipe for its stdin.
class Lender {
 public:
  Lender(int binary, off_t size, const LendLimits& limits) {
    int p[2];
    EXPECT_EQ(0, ::pipe2(p, O_CLOEXEC));
    stop_read_.reset(p[0]);
    stop_write_.reset(p[1]);
    UniqueFd listener = Listen("127.0.0.1", &port_);
    served_ = std::async(
        std::launch::async, [this, l = std::move(listener), binary, size, limits]() mutable {
          return ServeBinary(std::move(l), binary, size, kToken, stop_read_.get(), limits);
        });
  }
  ~Lender() {
    Stop();
    if (served_.valid()) served_.wait();
  }

  UniqueFd Connect() const {
    UniqueFd fd = agent::Connect(ParseAddress("127.0.0.1", port_), 5s);
    const timeval tv{10, 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
  }
  // Presents `token` on a new connection and reads to EOF.
  std::string Fetch(const std::string& token) const {
    UniqueFd fd = Connect();
    const std::string line = token + "\n";
    EXPECT_EQ(static_cast<ssize_t>(line.size()),
              ::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL));
    return ReadAll(fd.get());
  }
  static std::string ReadAll(int fd) {
    std::string got;
    char buffer[65536];
    for (;;) {
      const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
      if (n <= 0) return got;
      got.append(buffer, static_cast<size_t>(n));
    }
  }
  // Closes its stdin.
  void Stop() { stop_write_.reset(); }
  // The number ServeBinary returned, if it returned within `within`.
  std::optional<int> Served(std::chrono::seconds within) {
    if (served_.wait_for(within) != std::future_status::ready) return std::nullopt;
    return served_.get();
  }

 private:
  UniqueFd stop_read_, stop_write_;
  uint16_t port_ = 0;
  std::future<int> served_;
};

LendLimits Patient() {
  LendLimits limits;
  limits.lifetime = 120s;
  limits.idle = 120s;
  return limits;
}

TEST(BinaryRelayTest, ServesATokenHolderAndEndsOnceStdinCloses) {
  const off_t size = 3 << 20;
  UniqueFd binary = MakeBinary(size);
  Lender lender(binary.get(), size, Patient());
  EXPECT_EQ(Contents(binary.get(), size), lender.Fetch(kToken));
  EXPECT_EQ(Contents(binary.get(), size), lender.Fetch(kToken));
  lender.Stop();
  EXPECT_EQ(std::optional<int>(2), lender.Served(30s));
}

TEST(BinaryRelayTest, ConnectionsWithoutTheTokenUseNoTransfer) {
  const off_t size = 1 << 16;
  UniqueFd binary = MakeBinary(size);
  LendLimits limits = Patient();
  limits.max_clients = 1;
  limits.token_deadline = 500ms;
  Lender lender(binary.get(), size, limits);
  EXPECT_EQ("", lender.Fetch(std::string(64, 'x')));  // the wrong token
  EXPECT_EQ("", lender.Fetch("short"));
  { UniqueFd closed = lender.Connect(); }  // nothing sent at all
  UniqueFd silent = lender.Connect();      // nothing sent: dropped at the deadline
  const auto began = Clock::now();
  EXPECT_EQ("", Lender::ReadAll(silent.get()));
  EXPECT_LT(Clock::now() - began, 8s);  // EOF, not the 10 s receive timeout
  // The one transfer is still there for the token holder; then the lender is done by itself.
  EXPECT_EQ(Contents(binary.get(), size), lender.Fetch(kToken));
  EXPECT_EQ(std::optional<int>(1), lender.Served(30s));
}

TEST(BinaryRelayTest, AClientTricklingItsTokenIsDroppedAtOneOverallDeadline) {
  const off_t size = 1 << 16;
  UniqueFd binary = MakeBinary(size);
  LendLimits limits = Patient();
  limits.token_deadline = 300ms;
  Lender lender(binary.get(), size, limits);
  UniqueFd slow = lender.Connect();
  const auto began = Clock::now();
  bool dropped = false;
  // A byte every 100 ms, never a whole line: each read is quick, the token never comes.
  while (!dropped && Clock::now() - began < 20s) {
    if (::send(slow.get(), "a", 1, MSG_NOSIGNAL) != 1) dropped = true;
    pollfd p{slow.get(), POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char c;
      dropped = ::recv(slow.get(), &c, 1, 0) <= 0;
    }
  }
  EXPECT_TRUE(dropped);
  EXPECT_LT(Clock::now() - began, 10s);  // the deadline is 300 ms: generous on a loaded machine
  EXPECT_EQ(Contents(binary.get(), size), lender.Fetch(kToken));
}

TEST(BinaryRelayTest, StalledStrangersOnlyDelayATokenHolder) {
  const off_t size = 1 << 16;
  UniqueFd binary = MakeBinary(size);
  LendLimits limits = Patient();
  limits.token_deadline = 500ms;
  limits.max_unauthenticated = 2;
  Lender lender(binary.get(), size, limits);
  UniqueFd a = lender.Connect(), b = lender.Connect();  // the cap: the next waits unaccepted
  EXPECT_EQ(Contents(binary.get(), size), lender.Fetch(kToken));
  lender.Stop();
  EXPECT_EQ(std::optional<int>(1), lender.Served(30s));
}

TEST(BinaryRelayTest, ATransferInProgressEndsOnceStdinCloses) {
  const off_t size = off_t{256} << 20;  // far more than the sockets' buffers hold
  UniqueFd binary = MakeBinary(size);
  Lender lender(binary.get(), size, Patient());
  UniqueFd reader = lender.Connect();  // presents the token, then reads nothing
  const std::string line = kToken + "\n";
  ASSERT_EQ(static_cast<ssize_t>(line.size()),
            ::send(reader.get(), line.data(), line.size(), MSG_NOSIGNAL));
  char c;
  ASSERT_EQ(1, ::recv(reader.get(), &c, 1, 0));  // the transfer runs
  lender.Stop();
  // Its thread is stopped and joined, not left sending (or waiting out a 10 s send timeout).
  EXPECT_EQ(std::optional<int>(1), lender.Served(8s));
  EXPECT_LT(Lender::ReadAll(reader.get()).size(), static_cast<size_t>(size));
}

// `podrun-agent lend --address A`, run as the launcher runs it: the token on stdin (held open
// for `hold_seconds`), its first line of output (stdout and stderr) read into *first. Returns
// the port it announced (0 if none); *out is its output, for pclose.
uint16_t RunLend(const std::string& address, int hold_seconds, std::FILE** out,
                 std::string* first) {
  const std::string command = "(echo " + kToken + "; sleep " + std::to_string(hold_seconds) +
                              ") | " + PODRUN_AGENT_BINARY + " lend --address " + address +
                              " --seconds 10 2>&1";
  *out = ::popen(command.c_str(), "r");
  char line[512] = {};
  if (!*out || !std::fgets(line, sizeof line, *out)) return 0;
  const std::string text(line), prefix = std::string(kServingPrefix) + " ";
  *first = text;
  return text.starts_with(prefix) ? static_cast<uint16_t>(std::stoi(text.substr(prefix.size())))
                                  : 0;
}

bool Accepts(const std::string& host, uint16_t port) {
  try {
    return static_cast<bool>(Connect(ParseAddress(host, port), 2s));
  } catch (const AgentError&) {
    return false;
  }
}

TEST(BinaryRelayTest, TheLenderListensOnTheGivenAddressOnly) {
  std::FILE* out = nullptr;
  std::string first;
  const uint16_t port = RunLend("127.0.0.2", 2, &out, &first);
  ASSERT_NE(0, port);
  EXPECT_TRUE(Accepts("127.0.0.2", port));
  EXPECT_FALSE(Accepts("127.0.0.1", port));  // not on every interface
  EXPECT_EQ(0, ::pclose(out));
}

TEST(BinaryRelayTest, ALenderGivenAnAddressThisMachineLacksRefusesRatherThanListenEverywhere) {
  std::FILE* out = nullptr;
  std::string said;
  EXPECT_EQ(0, RunLend("192.0.2.1", 0, &out, &said));  // TEST-NET-1: nobody's
  ASSERT_NE(nullptr, out);
  for (char buf[512]; std::fgets(buf, sizeof buf, out);) said += buf;
  const int status = ::pclose(out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status << " " << said;
  EXPECT_EQ(std::string::npos, said.find(kServingPrefix)) << said;
  EXPECT_NE(std::string::npos, said.find("listen on 192.0.2.1")) << said;
}

}  // namespace
}  // namespace podrun::agent
