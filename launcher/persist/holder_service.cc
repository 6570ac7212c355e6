// Serving one command's exec through a kept session.
#include "launcher/persist/holder_service.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <array>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <utility>

#include "launcher/base/error.h"
#include "launcher/ssh/channel_bridge.h"
#include "launcher/ssh/ssh_channel.h"

namespace podrun {
namespace {

using Socket = asio::local::stream_protocol::socket;
using Clock = std::chrono::steady_clock;

// How often a silent command's connection is looked at: gone, its channel is closed.
constexpr auto kCommandCheck = std::chrono::seconds(1);

asio::awaitable<void> SendText(Socket& socket, const std::string& text) {
  co_await asio::async_write(socket, asio::buffer(text), asio::use_awaitable);
}

asio::awaitable<void> SendFrame(Socket& socket, FrameType type, std::string_view data) {
  const std::string header = FrameHeader(type, data.size());
  const std::array<asio::const_buffer, 2> buffers{asio::buffer(header),
                                                  asio::buffer(data.data(), data.size())};
  co_await asio::async_write(socket, buffers, asio::use_awaitable);
}

// The command has nothing to send after its request: its end readable means it closed it.
bool CommandGone(Socket& socket) {
  pollfd p{socket.native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

Error Lost(SshSession& session, const std::string& why) {
  return Error(ExitCode::kUnreachable,
               fmt::format("{}: connection lost: {}", session.description(), why));
}

// Sends the channel's output as frames until its EOF, then returns its exit status; nullopt
// when the command closed its end first. Throws Error(kUnreachable) when the SSH connection
// broke, boost::system::system_error when the command's end did.
asio::awaitable<std::optional<ExitStatus>> Pump(SshChannel& channel, Socket& socket) {
  SshSession& session = channel.session();
  ssh_channel c = channel.raw();
  std::string buffer(kHolderMaxFrame, '\0');
  for (;;) {
    bool progress = false;
    const uint64_t bytes_in = session.bytes_in();
    for (int is_stderr = 0; is_stderr < 2; ++is_stderr) {
      const int n = ssh_channel_read_nonblocking(c, buffer.data(),
                                                 static_cast<uint32_t>(buffer.size()), is_stderr);
      session.NoteIo();
      if (n == SSH_ERROR) throw Lost(session, session.LastError());
      if (n > 0) {
        progress = true;
        co_await SendFrame(socket, is_stderr ? FrameType::kStderr : FrameType::kStdout,
                           std::string_view(buffer.data(), static_cast<size_t>(n)));
      }
    }
    // As SshChannel::Drain: one stream's read may have brought the other's data.
    if (progress || session.bytes_in() != bytes_in) continue;
    if (ssh_channel_is_eof(c) || ssh_channel_is_closed(c)) break;
    if (CommandGone(socket)) co_return std::nullopt;
    std::optional<std::string> broken;
    try {
      co_await session.WaitIoUntil(Clock::now() + kCommandCheck);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {  // its socket's wait was cancelled: the connection broke
      broken = e.what();
    }
    if (broken) throw Lost(session, *broken);
  }
  co_return co_await channel.WaitExitStatus();
}

struct OpenedExec {
  KeptSessions::Lease lease;  // declared first: outlives the channel
  std::unique_ptr<SshChannel> channel;
};

// Leases a session for `request` and starts its command on it. A kept session that fails to
// open the channel in time is forgotten and the worker connected afresh (once), within what is
// left of the request's connect timeout: a worker costs no more than a command's own connection.
asio::awaitable<OpenedExec> OpenExec(KeptSessions& sessions, HolderRequest request,
                                     void (*log)(const std::string&)) {
  const auto start = Clock::now();
  const auto budget = request.ssh.connect_timeout;
  for (;;) {
    OpenedExec opened;
    opened.lease = co_await sessions.Acquire(request);
    SshSession& session = opened.lease.session();
    if (!opened.lease.reused()) {
      log(fmt::format("connected {}", session.description()));
      opened.channel = co_await SshChannel::Exec(session, request.command);
      co_return opened;
    }
    std::string why;
    try {
      const auto deadline = start + std::min<Clock::duration>(kReuseAnswer, budget / 2);
      opened.channel = co_await SshChannel::Exec(session, request.command, deadline);
      co_return opened;
    } catch (const std::exception& e) {
      why = e.what();
    }
    log(fmt::format("kept connection {} unusable ({}): connecting afresh", session.description(),
                    why));
    opened.lease.Discard();
    request.ssh.connect_timeout = std::max(
        std::chrono::milliseconds(1),
        budget - std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start));
  }
}

// Serves a tunnel request: a channel to the agent's socket on a kept (or new) session, or to
// `podrun-agent dial-stdio` when the server refuses forwarding; after the reply, the command's
// connection and the channel are joined (ChannelBridge) until either ends or the SSH connection
// is lost (its keepalives unanswered: the command's end is closed, and it reconnects).
asio::awaitable<void> ServeTunnel(Socket socket, KeptSessions& sessions,
                                  const HolderRequest& request, void (*log)(const std::string&)) {
  HolderReply reply;
  KeptSessions::Lease lease;
  std::unique_ptr<SshChannel> channel;
  try {
    lease = co_await sessions.Acquire(request);
    SshSession& session = lease.session();
    if (!lease.reused()) log(fmt::format("connected {}", session.description()));
    try {
      channel = co_await SshChannel::OpenUnixSocket(session, request.socket_path);
    } catch (const Error&) {
      if (!ssh_is_connected(session.raw())) throw;  // the connection broke, not a refusal
    }
    if (!channel) {
      channel = co_await SshChannel::Exec(session, request.command);
      reply.dial_stdio = true;
    }
  } catch (const std::exception& e) {
    reply.error = e.what();
    reply.dial_stdio = false;
  }
  if (!channel) {
    log(reply.error);
    if (lease.has_session() && !ssh_is_connected(lease.session().raw())) lease.Discard();
    co_await SendText(socket, EncodeHolderReply(reply));
    co_return;
  }
  SshSession& session = lease.session();
  reply.ok = true;
  reply.host = session.description();
  reply.address = session.address();
  reply.reused = lease.reused();
  co_await SendText(socket, EncodeHolderReply(reply));
  const int fd = socket.release();
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  ChannelBridge bridge(lease.shared_session(), std::move(channel), fd, kAgentTunnelChunkBytes);
  asio::steady_timer check(co_await asio::this_coro::executor);
  while (!bridge.finished() && !session.lost()) {
    check.expires_after(kCommandCheck);
    boost::system::error_code ignored;
    co_await check.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  if (session.lost() || !ssh_is_connected(session.raw())) {
    log(fmt::format("{}: connection lost: {}", session.description(),
                    session.lost() ? "no answer to keepalives" : session.LastError()));
    lease.Discard();
  }
}

}  // namespace

asio::awaitable<void> ServeHolderConnection(Socket socket, KeptSessions& sessions,
                                            const HolderEnvironment& environment,
                                            void (*log)(const std::string& line)) {
  try {
    std::string line;
    const size_t n = co_await asio::async_read_until(
        socket, asio::dynamic_buffer(line, kHolderMaxLine), '\n', asio::use_awaitable);
    HolderReply reply;
    HolderRequest request;
    try {
      request = DecodeHolderRequest(std::string_view(line).substr(0, n - 1));
      if (request.auth_sock != environment.auth_sock || request.home != environment.home) {
        reply.fallback = true;
        reply.error = "another SSH_AUTH_SOCK or HOME than the holder's";
      }
    } catch (const std::exception& e) {
      reply.fallback = true;
      reply.error = e.what();
    }
    if (reply.fallback) {
      log("refused a request: " + reply.error);
      co_await SendText(socket, EncodeHolderReply(reply));
      co_return;
    }
    if (request.kind == HolderRequest::Kind::kTunnel) {
      co_await ServeTunnel(std::move(socket), sessions, request, log);
      co_return;
    }
    OpenedExec opened;
    try {
      opened = co_await OpenExec(sessions, request, log);
    } catch (const std::exception& e) {
      reply.error = e.what();
    }
    if (!opened.channel) {
      log(reply.error);
      co_await SendText(socket, EncodeHolderReply(reply));
      co_return;
    }
    reply.ok = true;
    reply.host = opened.lease.session().description();
    reply.reused = opened.lease.reused();
    co_await SendText(socket, EncodeHolderReply(reply));
    std::optional<std::string> lost;
    try {
      std::optional<ExitStatus> status = co_await Pump(*opened.channel, socket);
      if (!status) co_return;  // the command went away: the channel is closed on the server
      co_await SendFrame(socket, FrameType::kExit, EncodeExitStatus(*status));
    } catch (const Error& e) {
      lost = e.what();
    }
    if (lost) {
      log(*lost);
      opened.channel.reset();
      opened.lease.Discard();
      co_await SendFrame(socket, FrameType::kLost, *lost);
    }
  } catch (const std::exception&) {
    // The command's end broke (it was interrupted): nothing more to say to it.
  }
}

}  // namespace podrun
