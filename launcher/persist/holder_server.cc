// The connection holder's process: accept, serve, sweep, exit when empty.
#include "launcher/persist/holder_server.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>

#include "launcher/persist/holder_service.h"
#include "launcher/persist/kept_sessions.h"
#include "launcher/ssh/event_loop.h"
#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
using Socket = asio::local::stream_protocol::socket;

// How often kept sessions are looked at (their persist time, a lost connection, the socket).
constexpr auto kSweepPeriod = std::chrono::seconds(1);
// How long the holder stays with nothing to hold before it exits.
constexpr auto kEmptyGrace = std::chrono::seconds(2);

void Log(const std::string& line) {
  char stamp[32] = "";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (::gmtime_r(&now, &tm) != nullptr) std::strftime(stamp, sizeof stamp, "%FT%TZ", &tm);
  WriteAll(STDERR_FILENO, fmt::format("{} holder[{}]: {}\n", stamp, ::getpid(), line));
}

std::string EnvOr(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// Which file a path names now (nullopt: none), to tell our socket from a replacement.
std::optional<std::pair<dev_t, ino_t>> FileIdentity(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}

class Holder {
 public:
  Holder(int listen_fd, const HolderPaths& paths)
      : paths_(paths),
        acceptor_(loop_, asio::local::stream_protocol(), listen_fd),
        sessions_(loop_.get_executor()),
        sweep_(loop_),
        signals_(loop_, SIGTERM, SIGINT, SIGHUP),
        socket_identity_(FileIdentity(paths.socket)),
        environment_{EnvOr("SSH_AUTH_SOCK"), EnvOr("HOME")} {}

  void Run() {
    Log(fmt::format("started, serving {}", paths_.socket.string()));
    signals_.async_wait([this](boost::system::error_code ec, int signal) {
      if (ec) return;
      Log(fmt::format("signal {}: exiting", signal));
      RemoveOwnSocket();
      loop_.stop();
    });
    asio::co_spawn(loop_, Accept(), asio::detached);
    asio::co_spawn(loop_, Sweep(), asio::detached);
    loop_.run();
    loop_.DestroyPending();  // the suspended coroutines refer to the members below
    Log("exited");
  }

 private:
  asio::awaitable<void> Accept() {
    for (;;) {
      Socket socket(loop_);
      boost::system::error_code ec;
      co_await acceptor_.async_accept(socket, asio::redirect_error(asio::use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      if (ec) {  // e.g. out of descriptors: the command falls back; try again a little later
        Log("accept: " + ec.message());
        asio::steady_timer pause(loop_, std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        continue;
      }
      ucred peer{};
      socklen_t length = sizeof peer;
      if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
          peer.uid != ::geteuid()) {
        Log(fmt::format("refused a connection from uid {}", peer.uid));
        continue;
      }
      ++active_;
      last_activity_ = Clock::now();
      asio::co_spawn(loop_, ServeHolderConnection(std::move(socket), sessions_, environment_, Log),
                     [this](const std::exception_ptr&) {
                       --active_;
                       last_activity_ = Clock::now();
                     });
    }
  }

  asio::awaitable<void> Sweep() {
    for (;;) {
      sweep_.expires_after(kSweepPeriod);
      boost::system::error_code ec;
      co_await sweep_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      const auto now = Clock::now();
      const size_t before = sessions_.size();
      const size_t kept = sessions_.Sweep(now);
      if (kept < before) Log(fmt::format("closed {} idle or lost connection(s)", before - kept));
      const bool replaced = FileIdentity(paths_.socket) != socket_identity_;
      if (replaced && acceptor_.is_open()) {
        Log("socket removed or replaced: no longer accepting");
        acceptor_.close(ec);
      }
      if (active_ > 0) continue;
      if (replaced || (kept == 0 && now - last_activity_ >= kEmptyGrace)) {
        if (replaced || LeaveIfIdle()) {
          Log(replaced ? "exiting: replaced" : "exiting: nothing held");
          loop_.stop();
          co_return;
        }
      }
    }
  }

  // Under the holder lock (so that no command replaces the socket meanwhile): when no command
  // waits to be accepted, removes the socket and stops accepting; returns whether it did.
  bool LeaveIfIdle() {
    UniqueFd lock(::open(paths_.lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!lock || ::flock(lock.get(), LOCK_EX) != 0) return false;
    pollfd p{acceptor_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) return false;  // a command connected just now: serve it
    RemoveOwnSocket();
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    return true;  // the lock is released with its fd
  }

  void RemoveOwnSocket() {
    if (socket_identity_ && FileIdentity(paths_.socket) == socket_identity_) {
      ::unlink(paths_.socket.c_str());
    }
  }

  HolderPaths paths_;
  LocalLoop loop_;
  asio::local::stream_protocol::acceptor acceptor_;
  KeptSessions sessions_;
  asio::steady_timer sweep_;
  asio::signal_set signals_;
  std::optional<std::pair<dev_t, ino_t>> socket_identity_;
  HolderEnvironment environment_;
  int active_ = 0;  // commands being served
  Clock::time_point last_activity_ = Clock::now();
};

}  // namespace

int RunHolder(int listen_fd, const HolderPaths& paths) {
  // The starting command reaps this process at once; the holder is its child, reparented.
  const pid_t child = ::fork();
  if (child < 0) {
    Log(fmt::format("fork: {}", std::strerror(errno)));
    return 1;
  }
  if (child > 0) ::_exit(0);
  std::signal(SIGPIPE, SIG_IGN);  // a command that went away is a write error, not a signal
  // Three descriptors per kept worker (its socket, libssh's wait copy, a command's connection):
  // as many as the system lets it have, for pods of hundreds.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  try {
    Holder holder(listen_fd, paths);
    holder.Run();
  } catch (const std::exception& e) {
    Log(std::string("failed: ") + e.what());
    return 1;
  }
  return 0;
}

}  // namespace podrun
