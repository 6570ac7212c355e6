// Running a ProxyCommand (see proxy_command.h).
#include "launcher/ssh/proxy_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

#include "launcher/base/error.h"
#include "proto/spawn.h"

namespace podrun {
namespace {

// How long Failure() waits for a process whose connection ended to be reaped: its socket
// closes as it exits, a moment before it can be waited for.
constexpr auto kExitGrace = std::chrono::milliseconds(500);
constexpr auto kExitPoll = std::chrono::milliseconds(20);

class ProxyProcess : public SshTransport {
 public:
  ProxyProcess(asio::any_io_executor executor, std::string command, pid_t pid)
      : executor_(std::move(executor)), command_(std::move(command)), pid_(pid) {}

  ~ProxyProcess() override {
    if (Reaped()) return;
    ::kill(pid_, SIGHUP);
    if (Reaped()) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }

  asio::awaitable<std::optional<std::string>> Failure() override {
    asio::steady_timer timer(executor_);
    for (auto waited = std::chrono::milliseconds(0); !Reaped() && waited < kExitGrace;
         waited += kExitPoll) {
      timer.expires_after(kExitPoll);
      boost::system::error_code ignored;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
    if (!status_) co_return std::nullopt;  // still running: the far side ended the connection
    int status = *status_;
    if (WIFEXITED(status)) {
      int code = WEXITSTATUS(status);
      co_return fmt::format("ProxyCommand '{}' exited with status {}{}", command_, code,
                            code == 127   ? " (command not found)"
                            : code == 126 ? " (cannot be run)"
                                          : "");
    }
    const char* name = ::sigabbrev_np(WTERMSIG(status));
    co_return fmt::format("ProxyCommand '{}' was killed by signal {} (SIG{})", command_,
                          WTERMSIG(status), name != nullptr ? name : "?");
  }

 private:
  // True once the process has been waited for; records its status.
  bool Reaped() {
    if (status_) return true;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) status_ = status;
    if (r < 0 && errno == ECHILD) status_ = 0;  // reaped by someone else
    return status_.has_value();
  }

  asio::any_io_executor executor_;
  std::string command_;
  pid_t pid_;
  std::optional<int> status_;
};

}  // namespace

std::string ExpandProxyCommand(const std::string& command, const SshTarget& where,
                               const std::string& original_host) {
  std::string out;
  for (size_t i = 0; i < command.size(); ++i) {
    if (command[i] != '%') {
      out += command[i];
      continue;
    }
    char token = i + 1 < command.size() ? command[++i] : '\0';
    switch (token) {
      case 'h':
        out += where.address;
        break;
      case 'p':
        out += std::to_string(where.port);
        break;
      case 'r':
        out += where.user;
        break;
      case 'n':
        out += original_host;
        break;
      case '%':
        out += '%';
        break;
      default:
        throw Error(ExitCode::kUnreachable,
                    fmt::format("ProxyCommand '{}': unknown token %{}", command, token));
    }
  }
  return out;
}

StartedTransport StartProxyCommand(const std::string& command,
                                   const asio::any_io_executor& executor) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("socketpair: {}", std::strerror(errno)));
  }
  // Ours non-blocking (libssh on the event loop), the command's as a pipe from a shell is.
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  // The command starts clean (proto/spawn.h): podrun ignores SIGPIPE (its tunnels) and blocks
  // SIGINT on its event loop's thread (the interrupt watcher takes it); a shell's child has
  // neither.
  pid_t pid = -1;
  try {
    pid = SpawnProcess({.argv = {"/bin/sh", "-c", "exec " + command},
                        .fds = {{STDIN_FILENO, fds[1]}, {STDOUT_FILENO, fds[1]}}});
  } catch (const SpawnError& e) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(ExitCode::kUnreachable,
                fmt::format("ProxyCommand '{}' cannot start: {}", command, e.what()));
  }
  ::close(fds[1]);
  return {std::make_unique<ProxyProcess>(executor, command, pid), fds[0]};
}

}  // namespace podrun
