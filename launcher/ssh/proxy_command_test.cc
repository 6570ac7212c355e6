// Tests of ProxyCommand token expansion and of a command that dies being the connection's error.
#include "launcher/ssh/proxy_command.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>

#include "launcher/base/error.h"

namespace podrun {
namespace {

SshTarget Target() {
  SshTarget t;
  t.address = "10.0.0.5";
  t.port = 2222;
  t.user = "root";
  return t;
}

TEST(ProxyCommandTest, ExpandsOpenSshTokens) {
  EXPECT_EQ("nc 10.0.0.5 2222 # root w5 100%",
            ExpandProxyCommand("nc %h %p # %r %n 100%%", Target(), "w5"));
}

TEST(ProxyCommandTest, UnknownTokenIsAnError) {
  EXPECT_THROW(ExpandProxyCommand("nc %h %q", Target(), "w5"), Error);
  EXPECT_THROW(ExpandProxyCommand("nc %", Target(), "w5"), Error);
}

std::optional<std::string> FailureOf(const std::string& command, const std::string& to_send) {
  asio::io_context context(1);
  StartedTransport started = StartProxyCommand(command, context.get_executor());
  // Writing to a command that is gone is an error, never a SIGPIPE.
  if (!to_send.empty()) {
    ::usleep(100 * 1000);
    (void)::send(started.fd, to_send.data(), to_send.size(), MSG_NOSIGNAL);
  }
  auto future = asio::co_spawn(context, started.transport->Failure(), asio::use_future);
  context.run();
  ::close(started.fd);
  return future.get();
}

TEST(ProxyCommandTest, MissingCommandIsReportedWithItsName) {
  auto why = FailureOf("/nonexistent-proxy %h", "SSH-2.0-test\r\n");
  ASSERT_TRUE(why);
  EXPECT_NE(std::string::npos, why->find("ProxyCommand '/nonexistent-proxy %h'")) << *why;
  EXPECT_NE(std::string::npos, why->find("status 127")) << *why;
}

TEST(ProxyCommandTest, ExitStatusAndSignalAreReported) {
  auto exited = FailureOf("sh -c 'exit 5'", "");
  ASSERT_TRUE(exited);
  EXPECT_NE(std::string::npos, exited->find("exited with status 5")) << *exited;
  auto killed = FailureOf("sh -c 'kill -TERM $$'", "");
  ASSERT_TRUE(killed);
  EXPECT_NE(std::string::npos, killed->find("SIGTERM")) << *killed;
}

TEST(ProxyCommandTest, RunningCommandIsNoFailure) {
  asio::io_context context(1);
  StartedTransport started = StartProxyCommand("cat", context.get_executor());
  auto future = asio::co_spawn(context, started.transport->Failure(), asio::use_future);
  context.run();
  EXPECT_FALSE(future.get());
  started.transport.reset();  // ends and reaps `cat`
  ::close(started.fd);
}

}  // namespace
}  // namespace podrun
