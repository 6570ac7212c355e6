// Async libssh sessions on the Asio event loop.
#include "launcher/ssh/ssh_session.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cstring>
#include <filesystem>
#include <functional>

#include "launcher/error.h"
#include "launcher/ssh/host_key_policy.h"

// ssh_send_keepalive is declared in server.h but works for clients too.
#include <libssh/server.h>

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kFirstRetryDelay = std::chrono::milliseconds(100);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(1600);
constexpr int kMaxSilentKeepalives = 3;

// A failure worth retrying: the server refused or reset a connection it may accept later.
struct TransientError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Error Unreachable(const std::string& message) { return Error(ExitCode::kUnreachable, message); }

std::string GetStringOption(ssh_session s, ssh_options_e option) {
  char* value = nullptr;
  if (ssh_options_get(s, option, &value) != SSH_OK || value == nullptr) return "";
  std::string out = value;
  ssh_string_free_char(value);
  return out;
}

bool LooksTransient(const std::string& message) {
  for (const char* word : {"refused", "reset", "disconnected", "Connection closed", "Broken pipe",
                           "Socket closed", "EOF"}) {
    if (message.find(word) != std::string::npos) return true;
  }
  return false;
}

struct ServerKey {
  std::string type;
  std::string fingerprint;
};

ServerKey GetServerKey(ssh_session s) {
  ServerKey out{"unknown", "unknown"};
  ssh_key key = nullptr;
  if (ssh_get_server_publickey(s, &key) != SSH_OK) return out;
  out.type = ssh_key_type_to_char(ssh_key_type(key));
  unsigned char* hash = nullptr;
  size_t hash_len = 0;
  if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) == SSH_OK) {
    char* fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
    if (fp != nullptr) {
      out.fingerprint = fp;
      ssh_string_free_char(fp);
    }
    ssh_clean_pubkey_hash(&hash);
  }
  ssh_key_free(key);
  return out;
}

}  // namespace

void SshSessionDeleter::operator()(ssh_session s) const {
  if (s == nullptr) return;
  ssh_disconnect(s);
  ssh_free(s);
}

SshSession::SshSession(asio::any_io_executor executor, UniqueSshSession session,
                       std::string description, std::string address,
                       std::chrono::milliseconds keepalive_interval)
    : session_(std::move(session)),
      waiter_(executor),
      description_(std::move(description)),
      address_(std::move(address)),
      keepalive_interval_(keepalive_interval) {}

void SshSession::WatchFd(int fd) {
  int copy = ::dup(fd);
  if (copy < 0) throw Unreachable(fmt::format("dup: {}", std::strerror(errno)));
  ::fcntl(copy, F_SETFD, FD_CLOEXEC);
  waiter_.assign(copy);
}

asio::awaitable<std::unique_ptr<SshSession>> SshSession::Connect(HostSpec target,
                                                                 SshOptions options) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer deadline(executor);
  auto give_up_at = Clock::now() + options.connect_timeout;
  auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(kFirstRetryDelay);
  for (;;) {
    std::string transient;
    try {
      co_return co_await ConnectOnce(target, options, deadline);
    } catch (const TransientError& e) {
      transient = e.what();
    }
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

asio::awaitable<std::unique_ptr<SshSession>> SshSession::ConnectOnce(const HostSpec& target,
                                                                     const SshOptions& options,
                                                                     asio::steady_timer& deadline) {
  auto executor = co_await asio::this_coro::executor;
  UniqueSshSession s(ssh_new());
  if (!s) throw Unreachable("cannot allocate an SSH session");
  ssh_options_set(s.get(), SSH_OPTIONS_HOST, target.host.c_str());
  if (auto user = target.user ? target.user : options.default_user) {
    ssh_options_set(s.get(), SSH_OPTIONS_USER, user->c_str());
  }
  if (auto port = target.port ? target.port : options.default_port) {
    unsigned int value = static_cast<unsigned int>(*port);
    ssh_options_set(s.get(), SSH_OPTIONS_PORT, &value);
  }
  ssh_options_set(s.get(), SSH_OPTIONS_KNOWNHOSTS, options.known_hosts.c_str());
  int process_config = 0;
  ssh_options_set(s.get(), SSH_OPTIONS_PROCESS_CONFIG, &process_config);
  if (ssh_options_parse_config(
          s.get(), options.ssh_config ? options.ssh_config->c_str() : nullptr) != SSH_OK) {
    throw Unreachable(fmt::format("cannot parse ssh_config: {}", ssh_get_error(s.get())));
  }
  std::string address = GetStringOption(s.get(), SSH_OPTIONS_HOST);
  unsigned int port = 22;
  ssh_options_get_port(s.get(), &port);
  std::string user = GetStringOption(s.get(), SSH_OPTIONS_USER);
  std::string description = fmt::format("{}{}:{}", user.empty() ? "" : user + "@", address, port);
  std::string proxy = GetStringOption(s.get(), SSH_OPTIONS_PROXYCOMMAND);

  // One deadline for the whole connection: resolve, TCP, handshake, authentication.
  bool timed_out = false;
  asio::ip::tcp::resolver resolver(executor);
  asio::ip::tcp::socket socket(executor);
  std::unique_ptr<SshSession> session(
      new SshSession(executor, std::move(s), description, address, options.keepalive_interval));
  deadline.expires_after(options.connect_timeout);
  deadline.async_wait([&](boost::system::error_code ec) {
    if (ec) return;  // cancelled: the frame may be gone; touch nothing
    timed_out = true;
    resolver.cancel();
    boost::system::error_code ignored;
    socket.cancel(ignored);
    session->waiter_.cancel(ignored);
  });
  struct CancelDeadline {
    asio::steady_timer& timer;
    ~CancelDeadline() { timer.cancel(); }
  } cancel_deadline{deadline};

  auto timeout_error = [&] {
    return Unreachable(
        fmt::format("connection timed out after {} s", options.connect_timeout.count() / 1000.0));
  };
  ssh_session raw = session->raw();
  try {
    if (proxy.empty()) {
      auto endpoints =
          co_await resolver.async_resolve(address, std::to_string(port), asio::use_awaitable);
      co_await asio::async_connect(socket, endpoints, asio::use_awaitable);
      socket.set_option(asio::ip::tcp::no_delay(true));
      int fd = socket.release();
      ssh_options_set(raw, SSH_OPTIONS_FD, &fd);
      session->WatchFd(fd);
      ssh_set_blocking(raw, 0);
    } else {
      ssh_set_blocking(raw, 0);
      int rc = ssh_connect(raw);  // starts the ProxyCommand (ProxyJump) and gives libssh its fd
      if (rc == SSH_ERROR) throw Unreachable(fmt::format("proxy: {}", ssh_get_error(raw)));
      session->WatchFd(ssh_get_fd(raw));
    }
    co_await session->Handshake(options);
    co_await session->Authenticate(options);
  } catch (const boost::system::system_error& e) {
    if (timed_out) throw timeout_error();
    auto code = e.code();
    std::string reason = code.message();
    if (code == asio::error::host_not_found || code == asio::error::host_not_found_try_again) {
      throw Unreachable(fmt::format("cannot resolve host '{}'", address));
    }
    if (code == asio::error::connection_refused || code == asio::error::connection_reset) {
      throw TransientError(fmt::format("{}: {}", description, reason));
    }
    throw Unreachable(fmt::format("{}: {}", description, reason));
  } catch (const Error&) {
    if (timed_out) throw timeout_error();
    throw;
  }
  co_return session;
}

asio::awaitable<void> SshSession::Handshake(const SshOptions& options) {
  ssh_session s = session_.get();
  int rc = co_await Retry([s] { return ssh_connect(s); });
  if (rc != SSH_OK) {
    std::string message = fmt::format("{}: SSH handshake failed: {}", description_, LastError());
    if (LooksTransient(message)) throw TransientError(message);
    throw Unreachable(message);
  }
  ssh_known_hosts_e state = ssh_session_is_known_server(s);
  HostKeyAction action = DecideHostKey(state, options.strict_host_keys);
  if (action == HostKeyAction::kAccept) co_return;
  ServerKey key = GetServerKey(s);
  if (action == HostKeyAction::kRecord) {
    std::error_code ignored;
    auto dir = std::filesystem::path(options.known_hosts).parent_path();
    if (!dir.empty() && !std::filesystem::exists(dir, ignored)) {
      std::filesystem::create_directories(dir, ignored);
      ::chmod(dir.c_str(), 0700);
    }
    if (ssh_session_update_known_hosts(s) != SSH_OK) {
      throw Unreachable(fmt::format("{}: cannot record the host key in {}: {}", description_,
                                    options.known_hosts, LastError()));
    }
    co_return;
  }
  throw Unreachable(fmt::format(
      "{}: {}", description_,
      HostKeyRefusal(action, address_, key.type, key.fingerprint, options.known_hosts)));
}

asio::awaitable<void> SshSession::Authenticate(const SshOptions& options) {
  ssh_session s = session_.get();
  int rc = co_await Retry([s] { return ssh_userauth_none(s, nullptr); }, SSH_AUTH_AGAIN);
  if (rc == SSH_AUTH_SUCCESS) co_return;
  if (rc == SSH_AUTH_ERROR) {
    throw Unreachable(fmt::format("{}: authentication: {}", description_, LastError()));
  }
  std::string tried;
  if (options.identity) {
    ssh_key key = nullptr;
    if (ssh_pki_import_privkey_file(options.identity->c_str(), nullptr, nullptr, nullptr, &key) !=
        SSH_OK) {
      throw Unreachable(
          fmt::format("{}: cannot read identity file {}", description_, *options.identity));
    }
    std::unique_ptr<ssh_key_struct, void (*)(ssh_key)> owned(key, ssh_key_free);
    rc = co_await Retry([s, key] { return ssh_userauth_publickey(s, nullptr, key); },
                        SSH_AUTH_AGAIN);
    tried = "identity file " + *options.identity;
  } else {
    rc = co_await Retry([s] { return ssh_userauth_publickey_auto(s, nullptr, nullptr); },
                        SSH_AUTH_AGAIN);
    tried = "ssh-agent and the default key files";
  }
  if (rc == SSH_AUTH_SUCCESS) co_return;
  if (rc == SSH_AUTH_ERROR) {
    throw Unreachable(fmt::format("{}: authentication: {}", description_, LastError()));
  }
  throw Unreachable(
      fmt::format("{}: permission denied (publickey; tried {})", description_, tried));
}

SshSession::~SshSession() {
  if (keepalive_timer_) keepalive_timer_->cancel();
}

std::string SshSession::LastError() const { return ssh_get_error(session_.get()); }

asio::awaitable<void> SshSession::WaitIo() {
  auto lost = [this] {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: connection lost: no answer to keepalives for {} s", description_,
                             std::chrono::duration_cast<std::chrono::seconds>(keepalive_interval_ *
                                                                              kMaxSilentKeepalives)
                                 .count()));
  };
  if (dead_) throw lost();
  int flags = ssh_get_poll_flags(session_.get());
  auto kind = (flags & SSH_WRITE_PENDING) ? asio::posix::stream_descriptor::wait_write
                                          : asio::posix::stream_descriptor::wait_read;
  try {
    co_await waiter_.async_wait(kind, asio::use_awaitable);
  } catch (const boost::system::system_error&) {
    if (dead_) throw lost();
    throw;
  }
}

void SshSession::StartKeepalive() {
  ssh_set_counters(session_.get(), &socket_counter_, nullptr);
  keepalive_timer_ = std::make_unique<asio::steady_timer>(waiter_.get_executor());
  ScheduleKeepalive();
}

void SshSession::ScheduleKeepalive() {
  keepalive_timer_->expires_after(keepalive_interval_);
  keepalive_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // cancelled: the session may be gone
    if (socket_counter_.in_bytes == last_in_bytes_) {
      if (++silent_intervals_ >= kMaxSilentKeepalives) {
        dead_ = true;
        boost::system::error_code ignored;
        waiter_.cancel(ignored);  // wakes every wait on this connection
        return;
      }
    } else {
      silent_intervals_ = 0;
      last_in_bytes_ = socket_counter_.in_bytes;
    }
    ssh_send_keepalive(session_.get());
    ScheduleKeepalive();
  });
}

}  // namespace podrun
