// Tests of the supervisor's control socket with a real socket and a LogWriter whose disk is
// full: after the job's end it lingers until a reader has said it has every record held only in
// memory, not merely until a reply carrying them was sent (a reader may drop what it fetched,
// read the disk first and ask again).
#include "worker/supervisor/control_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <system_error>
#include <thread>

#include "worker/base/unix_socket.h"
#include "worker/supervisor/supervisor_control.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

// One request, its whole reply (the server closes the connection after it); what came within
// 5 s if no one serves the socket any more.
std::string Ask(const std::filesystem::path& socket, const std::string& request) {
  UniqueFd fd = ConnectUnix(socket);
  EXPECT_TRUE(fd) << socket;
  if (!fd) return "";
  const timeval timeout{5, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  const std::string line = request + "\n";
  EXPECT_EQ(::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(line.size()));
  std::string reply;
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fd.get(), buf, sizeof buf)) > 0) reply.append(buf, got);
  return reply;
}

class ControlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/control.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  LogWriter writer_{
      [](const LogRecord&) { throw std::system_error(ENOSPC, std::generic_category(), "append"); },
      [] {}};
};

TEST_F(ControlServerTest, LingersUntilAReaderSaysItHasTheHeldRecords) {
  writer_.Append(LogStream::kStdout, "a\n", 1);
  writer_.Append(LogStream::kStdout, "b\n", 2);
  writer_.Finish(3);  // the disk still refuses: both stay in memory for live readers
  const std::filesystem::path socket = dir_ / "control.sock";
  ControlServer server(socket, writer_);
  std::atomic<bool> lingered{false};
  std::vector<LogRecord> fetched, after;
  bool lingering_after_fetch = false;
  std::thread reader([&] {
    fetched = DecodeLogRecords(Ask(socket, LogRequest(1)));
    std::this_thread::sleep_for(300ms);  // the reader drops them, reads the disk first...
    lingering_after_fetch = !lingered;
    after = DecodeLogRecords(Ask(socket, LogRequest(1)));  // ...and asks again: still there
    EXPECT_EQ(Ask(socket, LogRequest(3)), "");             // it has them all
  });
  server.Linger();
  lingered = true;
  reader.join();
  ASSERT_EQ(fetched.size(), 2u);
  EXPECT_EQ(fetched[1].data, "b\n");
  EXPECT_TRUE(lingering_after_fetch) << "the supervisor left once it had sent the records";
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].seq, 1u);
}

TEST_F(ControlServerTest, DoesNotLingerWhenNothingIsHeld) {
  ControlServer server(dir_ / "control.sock", writer_);
  const auto start = std::chrono::steady_clock::now();
  server.Linger();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

}  // namespace
}  // namespace podrun::agent
