// Async libssh sessions on the Asio event loop.
#include "launcher/ssh/ssh_session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cstring>
#include <functional>

#include "launcher/base/error.h"
#include "launcher/ssh/jump_hosts.h"
#include "launcher/ssh/proxy_command.h"
#include "launcher/ssh/ssh_authenticator.h"
#include "launcher/ssh/ssh_connect_error.h"

// ssh_send_keepalive is declared in server.h but works for clients too.
#include <libssh/server.h>

namespace podrun {

using ssh_connect_error::TransientError;
using ssh_connect_error::Unreachable;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFirstRetryDelay = std::chrono::milliseconds(100);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(1600);
constexpr int kMaxSilentKeepalives = 3;

}  // namespace

void SshSessionDeleter::operator()(ssh_session s) const {
  if (s == nullptr) return;
  // Open until now unless libssh closed it on a failure (it then forgets the number, which
  // may since name another file: only a socket libssh still holds is closed here).
  const socket_t fd = ssh_get_fd(s);
  ssh_disconnect(s);
  ssh_free(s);
  if (fd != SSH_INVALID_SOCKET) ::close(fd);
}

SshSession::SshSession(asio::any_io_executor executor, UniqueSshSession session,
                       std::string description, std::string address,
                       std::chrono::milliseconds keepalive_interval)
    : session_(std::move(session)),
      waiter_(executor),
      description_(std::move(description)),
      address_(std::move(address)),
      keepalive_interval_(keepalive_interval) {
  ssh_set_counters(session_.get(), &socket_counter_, nullptr);
}

void SshSession::WakeOnIo(const std::shared_ptr<asio::steady_timer>& timer) {
  std::erase_if(wakers_, [](const auto& w) { return w.expired(); });
  for (const auto& w : wakers_) {
    if (w.lock() == timer) return;
  }
  wakers_.push_back(timer);
}

void SshSession::NoteIo() {
  if (socket_counter_.in_bytes == noted_in_bytes_) return;
  noted_in_bytes_ = socket_counter_.in_bytes;
  // Acknowledge what came at once. OpenSSH's sshd leaves Nagle's algorithm on in sessions
  // without a terminal, so a small reply it sends while an earlier one is unacknowledged
  // waits for our ACK, which Linux delays up to 40 ms: every channel open and RPC answer
  // stalled that long (a warm launch spent 0.1 s of its 0.33 s so). Quick-ACK mode is not
  // sticky in Linux, hence after every read. A transport that is no TCP socket (a jump
  // host's channel, a ProxyCommand) refuses it once and is not asked again.
  if (quick_ack_) {
    const int one = 1;
    if (::setsockopt(waiter_.native_handle(), IPPROTO_TCP, TCP_QUICKACK, &one, sizeof one) != 0) {
      quick_ack_ = false;
    }
  }
  WakeAll();
}

void SshSession::WakeAll() {
  std::vector<std::weak_ptr<asio::steady_timer>> wakers;
  wakers.swap(wakers_);
  for (const auto& w : wakers) {
    if (auto timer = w.lock()) timer->cancel();
  }
}

void SshSession::WatchFd(int fd) {
  int copy = ::dup(fd);
  if (copy < 0) throw Unreachable(fmt::format("dup: {}", std::strerror(errno)));
  ::fcntl(copy, F_SETFD, FD_CLOEXEC);
  waiter_.assign(copy);
}

asio::awaitable<std::unique_ptr<SshSession>> SshSession::Connect(HostSpec target,
                                                                 SshOptions options,
                                                                 JumpHosts* jumps) {
  auto executor = co_await asio::this_coro::executor;
  auto give_up_at = Clock::now() + options.connect_timeout;
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstRetryDelay);
  for (;;) {
    std::string transient;
    try {
      co_return co_await ConnectOnce(target, options, jumps);
    } catch (const TransientError& e) {
      transient = e.what();
    }
    if (!options.retry_refused) throw Unreachable(transient);
    if (Clock::now() + delay >= give_up_at) {
      throw Unreachable(fmt::format("{} (gave up after {} s of retries)", transient,
                                    options.connect_timeout.count() / 1000.0));
    }
    asio::steady_timer pause(executor, delay);
    co_await pause.async_wait(asio::use_awaitable);
    delay =
        std::min(delay * 2, std::chrono::duration_cast<std::chrono::milliseconds>(kMaxRetryDelay));
    options.connect_timeout =
        std::chrono::duration_cast<std::chrono::milliseconds>(give_up_at - Clock::now());
  }
}

namespace {

// One connection attempt's deadline and what it cancels, shared with the deadline's handler:
// that handler may run after the attempt's frame is gone (its timer fired just as the attempt
// finished), so it owns what it touches and checks `finished` first.
struct ConnectWatch {
  explicit ConnectWatch(const asio::any_io_executor& executor)
      : deadline(executor), resolver(executor), socket(executor) {}
  asio::steady_timer deadline;
  asio::ip::tcp::resolver resolver;
  asio::ip::tcp::socket socket;
  asio::posix::stream_descriptor* waiter = nullptr;  // the session's, while it is being set up
  bool timed_out = false;
  bool finished = false;

  void Start(std::chrono::milliseconds timeout, const std::shared_ptr<ConnectWatch>& self) {
    deadline.expires_after(timeout);
    deadline.async_wait([self](boost::system::error_code ec) {
      if (ec || self->finished) return;
      self->timed_out = true;
      boost::system::error_code ignored;
      self->resolver.cancel();
      self->socket.cancel(ignored);
      if (self->waiter != nullptr) self->waiter->cancel(ignored);
    });
  }
  void Finish() {
    finished = true;
    waiter = nullptr;
    deadline.cancel();
  }
};

}  // namespace

asio::awaitable<std::unique_ptr<SshSession>> SshSession::ConnectOnce(const HostSpec& target,
                                                                     const SshOptions& options,
                                                                     JumpHosts* jumps) {
  auto executor = co_await asio::this_coro::executor;
  UniqueSshSession s(ssh_new());
  if (!s) throw Unreachable("cannot allocate an SSH session");
  SshTarget where = ConfigureSession(s.get(), target, options);
  std::string description = where.Describe();

  // One deadline for the whole connection: resolve, TCP, handshake, authentication.
  auto watch = std::make_shared<ConnectWatch>(executor);
  std::unique_ptr<SshSession> session(new SshSession(executor, std::move(s), description,
                                                     where.address, options.keepalive_interval));
  watch->waiter = &session->waiter_;
  watch->Start(options.connect_timeout, watch);
  struct FinishWatch {
    ConnectWatch& watch;
    ~FinishWatch() { watch.Finish(); }
  } finish_watch{*watch};

  auto timeout_error = [&] {
    return Unreachable(
        fmt::format("connection timed out after {} s", options.connect_timeout.count() / 1000.0));
  };
  ssh_session raw = session->raw();
  bool jump_failed = false;
  try {
    int fd = -1;
    if (!where.jump.empty()) {
      StartedTransport through;
      try {
        through = co_await ConnectThroughJump(jumps, where.jump, where.address, where.port, options,
                                              watch->deadline.expiry());
      } catch (const TransportRefused&) {
        throw;
      } catch (const Error&) {
        jump_failed = true;  // its message names the jump host and why, timeouts included
        throw;
      }
      session->transport_ = std::move(through.transport);
      fd = through.fd;
    } else if (!where.proxy_command.empty()) {
      StartedTransport proxy =
          StartProxyCommand(ExpandProxyCommand(where.proxy_command, where, target.host), executor);
      session->transport_ = std::move(proxy.transport);
      fd = proxy.fd;
    } else {
      auto endpoints = co_await watch->resolver.async_resolve(
          where.address, std::to_string(where.port), asio::use_awaitable);
      co_await asio::async_connect(watch->socket, endpoints, asio::use_awaitable);
      watch->socket.set_option(asio::ip::tcp::no_delay(true));
      fd = watch->socket.release();
    }
    if (ssh_options_set(raw, SSH_OPTIONS_FD, &fd) != SSH_OK) {
      ::close(fd);
      throw Unreachable(
          fmt::format("{}: cannot hand the socket to libssh: {}", description, ssh_get_error(raw)));
    }
    session->WatchFd(fd);
    ssh_set_blocking(raw, 0);
    co_await session->Establish(options);
  } catch (const boost::system::system_error& e) {
    if (watch->timed_out) throw timeout_error();
    auto code = e.code();
    std::string reason = code.message();
    if (code == asio::error::host_not_found || code == asio::error::host_not_found_try_again) {
      throw Unreachable(fmt::format("cannot resolve host '{}'", where.address));
    }
    if (code == asio::error::connection_refused || code == asio::error::connection_reset) {
      throw TransientError(fmt::format("{}: {}", description, reason));
    }
    throw Unreachable(fmt::format("{}: {}", description, reason));
  } catch (const TransportRefused& e) {
    if (watch->timed_out) throw timeout_error();
    throw TransientError(e.what());
  } catch (const Error&) {
    if (watch->timed_out && !jump_failed) throw timeout_error();
    throw;
  }
  co_return session;
}

asio::awaitable<void> SshSession::Establish(const SshOptions& options) {
  std::exception_ptr failure;
  try {
    SshAuthenticator authenticator(*this, options);
    co_await authenticator.Handshake();
    co_await authenticator.Authenticate();
    co_return;
  } catch (...) {
    failure = std::current_exception();
  }
  // The connection ended: if the transport did (its process exited, the jump host's
  // connection broke), that is the reason, and no retry will change it.
  if (transport_) {
    if (std::optional<std::string> why = co_await transport_->Failure()) {
      throw Unreachable(fmt::format("{}: {}", description_, *why));
    }
  }
  std::rethrow_exception(failure);
}

struct SshSession::Keepalive {
  explicit Keepalive(const asio::any_io_executor& executor) : timer(executor) {}
  asio::steady_timer timer;
  SshSession* session = nullptr;  // null once the session is destroyed
  uint64_t last_in_bytes = 0;
  int silent_intervals = 0;
};

SshSession::~SshSession() {
  if (keepalive_) {
    keepalive_->session = nullptr;
    keepalive_->timer.cancel();
  }
}

std::string SshSession::LastError() const { return ssh_get_error(session_.get()); }

bool SshSession::ReadyNow(bool want_input) {
  const bool write_pending = (ssh_get_poll_flags(session_.get()) & SSH_WRITE_PENDING) != 0;
  if (!want_input && !write_pending) return false;
  pollfd p{waiter_.native_handle(),
           static_cast<short>((want_input ? POLLIN : 0) | (write_pending ? POLLOUT : 0)), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  bool ready = want_input && (p.revents & POLLIN) != 0;
  if (write_pending && (p.revents & POLLOUT) != 0) {
    ssh_blocking_flush(session_.get(), 0);  // 0: what the socket takes now, without waiting
    NoteIo();
    ready = true;
  }
  return ready;
}

asio::awaitable<void> SshSession::WaitIo() { co_await WaitIoUntil(Clock::time_point::max()); }

asio::awaitable<bool> SshSession::WaitIoUntil(Clock::time_point deadline) {
  auto lost = [this] {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: connection lost: no answer to keepalives for {} s", description_,
                             std::chrono::duration_cast<std::chrono::seconds>(keepalive_interval_ *
                                                                              kMaxSilentKeepalives)
                                 .count()));
  };
  if (dead_) throw lost();
  // A closed connection stays readable (EOF): waiting would spin on it, not wait.
  if ((ssh_get_status(session_.get()) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: connection closed: {}", description_, LastError()));
  }
  if (ReadyNow()) {  // what no edge of the socket would announce (see ReadyNow)
    co_await asio::post(waiter_.get_executor(), asio::use_awaitable);
    if (dead_) throw lost();
    co_return true;
  }
  int flags = ssh_get_poll_flags(session_.get());
  auto kind = (flags & SSH_WRITE_PENDING) ? asio::posix::stream_descriptor::wait_write
                                          : asio::posix::stream_descriptor::wait_read;
  // Woken by the socket or by another channel's read (NoteIo). The socket's handler may run
  // after this frame is gone (woken by NoteIo first): it owns what it touches.
  struct Wait {
    explicit Wait(const asio::any_io_executor& executor)
        : timer(std::make_shared<asio::steady_timer>(executor)) {}
    std::shared_ptr<asio::steady_timer> timer;
    boost::system::error_code socket_error;
  };
  auto wait = std::make_shared<Wait>(waiter_.get_executor());
  WakeOnIo(wait->timer);
  waiter_.async_wait(kind, [wait](boost::system::error_code ec) {
    wait->socket_error = ec;
    wait->timer->cancel();
  });
  wait->timer->expires_at(deadline);
  boost::system::error_code cancelled;  // success: the deadline passed
  co_await wait->timer->async_wait(asio::redirect_error(asio::use_awaitable, cancelled));
  if (dead_) throw lost();
  if (wait->socket_error) throw boost::system::system_error(wait->socket_error);
  co_return cancelled || Clock::now() < deadline;
}

void SshSession::StartKeepalive() {
  if (keepalive_) return;
  keepalive_ = std::make_shared<Keepalive>(waiter_.get_executor());
  keepalive_->session = this;
  ScheduleKeepalive(keepalive_);
}

void SshSession::ScheduleKeepalive(const std::shared_ptr<Keepalive>& keepalive) {
  SshSession* self = keepalive->session;
  keepalive->timer.expires_after(self->keepalive_interval_);
  keepalive->timer.async_wait([keepalive](boost::system::error_code ec) {
    SshSession* session = keepalive->session;
    if (ec || session == nullptr) return;  // cancelled, or the session is gone
    uint64_t in_bytes = session->socket_counter_.in_bytes;
    if (in_bytes == keepalive->last_in_bytes) {
      if (++keepalive->silent_intervals >= kMaxSilentKeepalives) {
        session->dead_ = true;
        boost::system::error_code ignored;
        session->waiter_.cancel(ignored);  // wakes every wait on this connection
        session->WakeAll();
        return;
      }
    } else {
      keepalive->silent_intervals = 0;
      keepalive->last_in_bytes = in_bytes;
    }
    ssh_send_keepalive(session->session_.get());
    session->NoteIo();  // it may have read the socket for the other channels
    ScheduleKeepalive(keepalive);
  });
}

}  // namespace podrun
