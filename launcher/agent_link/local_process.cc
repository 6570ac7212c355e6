// Local processes on the event loop.
#include "launcher/agent_link/local_process.h"

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
#include <optional>

#include "launcher/base/error.h"
#include "proto/private_state.h"
#include "proto/spawn.h"

extern char** environ;

namespace podrun {
namespace {

constexpr auto kReapPoll = std::chrono::milliseconds(5);
constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";
constexpr size_t kPipeChunkBytes = size_t{64} * 1024;

// Variables a local worker's process inherits (LocalWorkerEnvironment); a trailing '*' is a
// prefix.
constexpr const char* kPassedThrough[] = {"PATH", "USER", "LOGNAME", "LANG",   "LC_*",
                                          "TERM", "TZ",   "SHELL",   "TMPDIR", "PODRUN_AGENT_*"};

bool PassedThrough(std::string_view name) {
  for (std::string_view pattern : kPassedThrough) {
    if (pattern.ends_with('*') ? name.starts_with(pattern.substr(0, pattern.size() - 1))
                               : name == pattern) {
      return true;
    }
  }
  return false;
}

// What the stderr pump shares with RunLocalProcess, owned by both: the pump is a detached
// coroutine, so nothing it touches may live in RunLocalProcess's frame.
struct StderrPump {
  StderrPump(const asio::any_io_executor& executor, int fd,
             std::function<void(Stream, std::string_view)> sink)
      : pipe(executor, fd),
        finished(executor, asio::steady_timer::time_point::max()),
        on_data(std::move(sink)) {}
  asio::posix::stream_descriptor pipe;
  asio::steady_timer finished;  // cancelled when the pipe has ended
  std::function<void(Stream, std::string_view)> on_data;
  bool done = false;
  bool abandoned = false;  // RunLocalProcess has ended: deliver nothing more
};

// Reads `pipe` to its end, handing each chunk to on_data (unless `abandoned` turns true).
asio::awaitable<void> Pump(asio::posix::stream_descriptor& pipe, Stream stream,
                           const std::function<void(Stream, std::string_view)>& on_data,
                           const bool* abandoned = nullptr) {
  std::string buffer(kPipeChunkBytes, '\0');
  for (;;) {
    boost::system::error_code ec;
    size_t n = co_await pipe.async_read_some(asio::buffer(buffer),
                                             asio::redirect_error(asio::use_awaitable, ec));
    if (abandoned != nullptr && *abandoned) co_return;
    if (n > 0) on_data(stream, std::string_view(buffer.data(), n));
    if (ec) co_return;  // EOF or error: the process closed its end
  }
}

asio::awaitable<void> PumpStderr(std::shared_ptr<StderrPump> pump) {
  try {
    co_await Pump(pump->pipe, Stream::kStderr, pump->on_data, &pump->abandoned);
  } catch (...) {
    // on_data threw: the stdout side reports the failure; just stop reading.
  }
  pump->done = true;
  pump->finished.cancel();
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

std::vector<std::string> LocalWorkerEnvironment(char* const* environment) {
  std::vector<std::string> out;
  bool has_path = false;
  for (char* const* e = environment; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t equals = entry.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, equals);
    if (!PassedThrough(name)) continue;
    has_path = has_path || name == "PATH";
    out.emplace_back(entry);
  }
  if (!has_path) out.push_back(std::string("PATH=") + kDefaultPath);
  return out;
}

char* const* LauncherEnvironment() { return environ; }

asio::awaitable<ExitStatus> RunLocalProcess(const LocalCommand& command,
                                            std::function<void(Stream, std::string_view)> on_data) {
  auto executor = co_await asio::this_coro::executor;
  std::vector<std::string> env;
  for (std::string& entry : LocalWorkerEnvironment(environ)) {
    if (!command.env.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  for (const auto& [key, value] : command.env) env.push_back(key + "=" + value);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("pipe: {}", std::strerror(errno)));
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    int saved = errno;
    ::close(out[0]);
    ::close(out[1]);
    throw Error(ExitCode::kUnreachable, fmt::format("pipe: {}", std::strerror(saved)));
  }
  pid_t pid = -1;
  std::optional<SpawnError> not_started;
  try {
    pid = SpawnProcess(
        {.argv = command.argv,
         .env = std::move(env),
         .fds = {{STDIN_FILENO, kSpawnDevNull}, {STDOUT_FILENO, out[1]}, {STDERR_FILENO, err[1]}},
         .group = SpawnGroup::kNewGroup,
         .cwd = command.cwd,
         .umask = InheritedUmask()});
  } catch (const SpawnError& e) {
    not_started = e;
  }
  ::close(out[1]);
  ::close(err[1]);
  if (not_started) {
    // As a shell says it: the reason on stderr, 127 (not found) or 126.
    ::close(out[0]);
    ::close(err[0]);
    on_data(Stream::kStderr, std::string(not_started->what()) + "\n");
    co_return ExitStatus{.exit_code = not_started->shell_exit_code(), .signal = {}};
  }
  asio::posix::stream_descriptor out_pipe(executor, out[0]);
  // Both pipes are read at once: stderr by a coroutine of its own, stdout by this one, which
  // then waits for stderr's end.
  auto err_pump = std::make_shared<StderrPump>(executor, err[0], on_data);
  asio::co_spawn(executor, PumpStderr(err_pump), asio::detached);
  struct Abandon {
    StderrPump& pump;
    ~Abandon() {
      pump.abandoned = true;  // on_data may refer to the caller's frame
      boost::system::error_code ignored;
      pump.pipe.cancel(ignored);
    }
  } abandon{*err_pump};
  co_await Pump(out_pipe, Stream::kStdout, on_data);
  if (!err_pump->done) {
    boost::system::error_code ec;
    co_await err_pump->finished.async_wait(asio::redirect_error(asio::use_awaitable, ec));
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
