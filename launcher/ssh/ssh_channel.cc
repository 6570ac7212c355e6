// Exec and stream-local channels over an SshSession.
#include "launcher/ssh/ssh_channel.h"

#include <fmt/format.h>
#include <libssh/ssh2.h>

#include <algorithm>

#include "launcher/base/error.h"
#include "launcher/ssh/channel_open_failure.h"
#include "launcher/ssh/ssh_transport.h"

namespace podrun {
namespace {

// The most handed to libssh at once by Write.
constexpr size_t kWriteChunkBytes = 32 << 10;

}  // namespace
namespace {

constexpr size_t kReadChunkBytes = size_t{64} * 1024;

void OnExitStatus(ssh_session, ssh_channel, int exit_status, void* userdata);
void OnExitSignal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                  void* userdata);

}  // namespace

void SshChannel::Deleter::operator()(ssh_channel c) const {
  if (c == nullptr) return;
  ssh_channel_free(c);  // no blocking close here: the session is non-blocking
}

SshChannel::SshChannel(SshSession& session, ssh_channel channel)
    : session_(session), channel_(channel) {
  ssh_callbacks_init(&callbacks_);
  callbacks_.userdata = &status_;
  callbacks_.channel_exit_status_function = OnExitStatus;
  callbacks_.channel_exit_signal_function = OnExitSignal;
  ssh_set_channel_callbacks(channel_.get(), &callbacks_);
}

SshChannel::~SshChannel() {
  if (channel_) ssh_remove_channel_callbacks(channel_.get(), &callbacks_);
}

namespace {

void OnExitStatus(ssh_session, ssh_channel, int exit_status, void* userdata) {
  auto* status = static_cast<ExitStatus*>(userdata);
  status->exit_code = exit_status;
}

void OnExitSignal(ssh_session, ssh_channel, const char* signal, int, const char*, const char*,
                  void* userdata) {
  auto* status = static_cast<ExitStatus*>(userdata);
  status->signal = signal ? signal : "?";
}

}  // namespace

asio::awaitable<std::unique_ptr<SshChannel>> SshChannel::Exec(
    SshSession& session, const std::string& command,
    std::chrono::steady_clock::time_point open_deadline) {
  ssh_channel raw = ssh_channel_new(session.raw());
  if (raw == nullptr) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: cannot open a channel: {}",
                                                    session.description(), session.LastError()));
  }
  std::unique_ptr<SshChannel> channel(new SshChannel(session, raw));
  int rc = SSH_AGAIN;
  for (;;) {
    rc = ssh_channel_open_session(raw);
    session.NoteIo();
    if (rc != SSH_AGAIN) break;
    if (!co_await session.WaitIoUntil(open_deadline)) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: no answer opening a channel in time", session.description()));
    }
  }
  if (rc != SSH_OK) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: cannot open a session channel: {}",
                                                    session.description(), session.LastError()));
  }
  rc = co_await session.Retry([&] { return ssh_channel_request_exec(raw, command.c_str()); });
  if (rc != SSH_OK) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: exec refused: {}", session.description(), session.LastError()));
  }
  co_return channel;
}

asio::awaitable<std::unique_ptr<SshChannel>> SshChannel::OpenUnixSocket(
    SshSession& session, const std::string& socket_path) {
  ssh_channel raw = ssh_channel_new(session.raw());
  if (raw == nullptr) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: cannot open a channel: {}",
                                                    session.description(), session.LastError()));
  }
  std::unique_ptr<SshChannel> channel(new SshChannel(session, raw));
  int rc = co_await session.Retry(
      [&] { return ssh_channel_open_forward_unix(raw, socket_path.c_str(), "127.0.0.1", 0); });
  if (rc != SSH_OK) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: stream-local forwarding to {} refused: {}", session.description(),
                            socket_path, session.LastError()));
  }
  co_return channel;
}

asio::awaitable<std::unique_ptr<SshChannel>> SshChannel::OpenTcp(
    SshSession& session, const std::string& host, unsigned int port,
    std::chrono::steady_clock::time_point deadline) {
  ssh_channel raw = ssh_channel_new(session.raw());
  if (raw == nullptr) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: cannot open a channel: {}",
                                                    session.description(), session.LastError()));
  }
  std::unique_ptr<SshChannel> channel(new SshChannel(session, raw));
  const int port_number = static_cast<int>(port);
  for (;;) {
    int rc = ssh_channel_open_forward(raw, host.c_str(), port_number, "127.0.0.1", 0);
    session.NoteIo();
    if (rc == SSH_OK) break;
    if (rc != SSH_AGAIN) {
      std::string reason = session.LastError();
      std::string message = fmt::format("jump host {}: cannot reach {}:{} through it: {}",
                                        session.description(), host, port, reason);
      // The server answered that its connect() to the destination failed (e.g. that sshd is
      // not listening yet): told by the failure's reason code, never by its text, which is the
      // server's to write.
      if (ssh_is_connected(session.raw()) &&
          ChannelOpenFailureReason(ssh_get_error_code(session.raw()), reason) ==
              uint32_t{SSH2_OPEN_CONNECT_FAILED}) {
        throw TransportRefused(message);
      }
      throw Error(ExitCode::kUnreachable, message);
    }
    if (!co_await session.WaitIoUntil(deadline)) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("jump host {}: no answer opening a channel to {}:{} in time",
                              session.description(), host, port));
    }
  }
  co_return channel;
}

asio::awaitable<ExitStatus> SshChannel::Drain(const OnData& on_data) {
  ssh_channel c = channel_.get();
  std::string buffer(kReadChunkBytes, '\0');
  for (;;) {
    bool progress = false;
    const uint64_t bytes_in = session_.bytes_in();
    for (int is_stderr = 0; is_stderr < 2; ++is_stderr) {
      int n = ssh_channel_read_nonblocking(c, buffer.data(), kReadChunkBytes, is_stderr);
      session_.NoteIo();
      if (n == SSH_ERROR) {
        throw Error(
            ExitCode::kUnreachable,
            fmt::format("{}: connection lost: {}", session_.description(), session_.LastError()));
      }
      if (n > 0) {
        progress = true;
        on_data(is_stderr ? Stream::kStderr : Stream::kStdout,
                std::string_view(buffer.data(), static_cast<size_t>(n)));
      }
    }
    // The stderr read may have brought stdout's next data from the socket (libssh handles
    // every packet it reads): then look again, the socket will not say so (seen: 15 s stalls).
    if (progress || session_.bytes_in() != bytes_in) continue;
    if (ssh_channel_is_eof(c) || ssh_channel_is_closed(c)) break;
    co_await session_.WaitIo();
  }
  co_return co_await WaitExitStatus();
}

asio::awaitable<ExitStatus> SshChannel::WaitExitStatus() {
  ssh_channel c = channel_.get();
  // The exit status travels just before (or with) EOF/close; wait for it or the close.
  while (!status_.exit_code && status_.signal.empty() && !ssh_channel_is_closed(c)) {
    ssh_channel_get_exit_status(c);  // non-blocking here: processes pending packets
    session_.NoteIo();
    if (status_.exit_code || !status_.signal.empty() || ssh_channel_is_closed(c)) break;
    co_await session_.WaitIo();
  }
  co_return status_;
}

asio::awaitable<bool> SshChannel::ReadUntil(const OnData& on_data,
                                            const std::function<bool()>& done,
                                            std::chrono::steady_clock::time_point deadline) {
  ssh_channel c = channel_.get();
  std::string buffer(kReadChunkBytes, '\0');
  for (;;) {
    bool progress = false;
    const uint64_t bytes_in = session_.bytes_in();
    for (int is_stderr = 0; is_stderr < 2; ++is_stderr) {
      int n = ssh_channel_read_nonblocking(c, buffer.data(), kReadChunkBytes, is_stderr);
      session_.NoteIo();
      if (n == SSH_ERROR) {
        throw Error(
            ExitCode::kUnreachable,
            fmt::format("{}: connection lost: {}", session_.description(), session_.LastError()));
      }
      if (n > 0) {
        progress = true;
        on_data(is_stderr ? Stream::kStderr : Stream::kStdout,
                std::string_view(buffer.data(), static_cast<size_t>(n)));
        if (done()) co_return true;
      }
    }
    // As in Drain: a read may have brought the other stream's data without the socket saying so.
    if (progress || session_.bytes_in() != bytes_in) continue;
    if (ssh_channel_is_eof(c) || ssh_channel_is_closed(c)) co_return false;
    if (!co_await session_.WaitIoUntil(deadline)) co_return false;
  }
}

asio::awaitable<void> SshChannel::Write(std::string_view data) {
  ssh_channel c = channel_.get();
  ssh_session s = session_.raw();
  while (!data.empty()) {
    // libssh copies what it is given (up to the peer's whole window, 2 MB for OpenSSH) into
    // its output buffer: hand it one small chunk at a time, and the next only once the socket
    // takes more (each write first flushes what libssh still holds), so that what a worker
    // costs here stays about one chunk, whatever is uploaded to how many workers.
    const int n = ssh_channel_write(c, data.data(),
                                    static_cast<uint32_t>(std::min(data.size(), kWriteChunkBytes)));
    session_.NoteIo();
    if (n == SSH_ERROR) {
      throw Error(
          ExitCode::kUnreachable,
          fmt::format("{}: write failed: {}", session_.description(), session_.LastError()));
    }
    data.remove_prefix(static_cast<size_t>(n));
    // Nothing taken: the window is full (wait for the peer's window adjust); output pending:
    // wait until the socket is writable again.
    if (n == 0 || (ssh_get_poll_flags(s) & SSH_WRITE_PENDING)) co_await session_.WaitIo();
  }
}

asio::awaitable<void> SshChannel::SendEof() {
  ssh_channel c = channel_.get();
  co_await session_.Retry([c] { return ssh_channel_send_eof(c); });
}

}  // namespace podrun
