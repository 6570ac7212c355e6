// Local processes on the event loop.
#include "launcher/agent/local_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>

#include "launcher/error.h"

extern char** environ;

namespace podrun {
namespace {

constexpr auto kReapPoll = std::chrono::milliseconds(5);

asio::awaitable<void> Pump(asio::posix::stream_descriptor& pipe, Stream stream,
                           const std::function<void(Stream, std::string_view)>& on_data) {
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    boost::system::error_code ec;
    size_t n = co_await pipe.async_read_some(asio::buffer(buffer),
                                             asio::redirect_error(asio::use_awaitable, ec));
    if (n > 0) on_data(stream, std::string_view(buffer.data(), n));
    if (ec) co_return;  // EOF or error: the process closed its end
  }
}

ExitStatus StatusOf(int wait_status) {
  ExitStatus status;
  if (WIFEXITED(wait_status)) status.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) {
    const char* name = ::sigabbrev_np(WTERMSIG(wait_status));
    status.signal = name ? name : std::to_string(WTERMSIG(wait_status));
  }
  return status;
}

}  // namespace

asio::awaitable<ExitStatus> RunLocalProcess(const LocalCommand& command,
                                            std::function<void(Stream, std::string_view)> on_data) {
  auto executor = co_await asio::this_coro::executor;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string key(entry.substr(0, entry.find('=')));
    if (!command.env.count(key)) env_strings.emplace_back(entry);
  }
  for (const auto& [key, value] : command.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("pipe: {}", std::strerror(errno)));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    if (!command.cwd.empty() && ::chdir(command.cwd.c_str()) != 0) _exit(126);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  if (pid < 0) {
    ::close(out[0]);
    ::close(err[0]);
    throw Error(ExitCode::kUnreachable, fmt::format("fork: {}", std::strerror(errno)));
  }
  asio::posix::stream_descriptor out_pipe(executor, out[0]);
  asio::posix::stream_descriptor err_pipe(executor, err[0]);
  // Both pipes are read by one coroutine each; this one waits for the first to end.
  bool err_done = false;
  asio::steady_timer err_finished(executor, asio::steady_timer::time_point::max());
  asio::co_spawn(
      executor,
      [&]() -> asio::awaitable<void> {
        co_await Pump(err_pipe, Stream::kStderr, on_data);
        err_done = true;
        err_finished.cancel();
      },
      asio::detached);
  co_await Pump(out_pipe, Stream::kStdout, on_data);
  if (!err_done) {
    boost::system::error_code ec;
    co_await err_finished.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  // Both pipes closed: the process is ending; reap it without blocking the loop.
  int wait_status = 0;
  asio::steady_timer poll(executor);
  while (::waitpid(pid, &wait_status, WNOHANG) == 0) {
    poll.expires_after(kReapPoll);
    co_await poll.async_wait(asio::use_awaitable);
  }
  co_return StatusOf(wait_status);
}

}  // namespace podrun
