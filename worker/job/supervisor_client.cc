// Starting and asking per-job supervisors (see supervisor_client.h).
#include "worker/job/supervisor_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "proto/private_state.h"
#include "worker/base/agent_error.h"
#include "worker/base/unix_socket.h"
#include "worker/supervisor/plan_codec.h"
#include "worker/supervisor/prepared_child.h"
#include "worker/supervisor/supervisor.h"
#include "worker/supervisor/supervisor_control.h"

extern char** environ;

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kReadyTimeout = std::chrono::seconds(30);
constexpr auto kFetchTimeout = std::chrono::milliseconds(3000);

// Reads until end-of-file, or `deadline`; false on timeout or error.
bool ReadAll(int fd, std::string* out, Clock::time_point deadline) {
  char buf[64 << 10];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return false;
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return false;
    if (got == 0) return true;
    out->append(buf, static_cast<size_t>(got));
  }
}

void WriteAllOrThrow(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(ErrnoMessage("hand the plan to the supervisor"));
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Reaps the middle process of SpawnSupervisor's double fork; throws std::runtime_error if the
// supervisor's own fork failed (the middle exits with that errno) or the middle died.
void CheckMiddleExit(pid_t middle) {
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(middle, &status, 0)) < 0 && errno == EINTR) {
  }
  if (waited < 0) {
    // ECHILD: SIGCHLD ignored (inherited so) reaps it unseen; handing over the plan tells then.
    if (errno == ECHILD) return;
    throw std::runtime_error(ErrnoMessage("wait for the job's supervisor's fork"));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status)) {
    throw std::runtime_error(ErrnoMessage("fork the job's supervisor", WEXITSTATUS(status)));
  }
  throw std::runtime_error("fork the job's supervisor: the forking process ended by signal " +
                           std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

}  // namespace

SpawnedSupervisor SpawnSupervisor(SupervisorLaunch& launch) {
  int control[2], go[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0) {
    throw std::runtime_error(ErrnoMessage("socketpair"));
  }
  UniqueFd control_ours(control[0]), control_theirs(control[1]);
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) != 0) {
    throw std::runtime_error(ErrnoMessage("socketpair"));
  }
  UniqueFd go_ours(go[0]), go_theirs(go[1]);
  UniqueFd devnull(::open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!devnull) throw std::runtime_error(ErrnoMessage("/dev/null"));

  // argv[0] names the agent's binary (ps shows what it is), whatever path execs it.
  std::error_code ec;
  const auto shown = std::filesystem::read_symlink(launch.binary, ec);
  std::vector<std::string> args = {ec ? launch.binary.string() : shown.string(),
                                   "supervise",
                                   "--home",
                                   launch.home.string(),
                                   "--job",
                                   launch.job_id,
                                   "--attempt",
                                   std::to_string(launch.attempt)};
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int fds[2] = {control_theirs.get(), go_theirs.get()};
  const char* binary = launch.binary.c_str();

  // fork, setsid, fork again: the supervisor is nobody's child here, and survives the agent.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t middle = ::_Fork();
  if (middle == 0) {
    ::setsid();
    // The middle's exit status tells the agent how the second fork went: 0, or its errno.
    const pid_t supervisor = ::_Fork();
    if (supervisor < 0) ::_exit(errno > 0 && errno < 256 ? errno : 255);
    if (supervisor > 0) ::_exit(0);
    // The supervisor: fds 3 and 4 as supervisor.h says, stdin /dev/null, stdout and stderr the
    // agent's log; the umask the agent inherited (the supervisor restricts its own again).
    const int control_fd = ::fcntl(fds[0], F_DUPFD, 10), go_fd = ::fcntl(fds[1], F_DUPFD, 10);
    if (control_fd < 0 || go_fd < 0 || ::dup2(control_fd, 3) < 0 || ::dup2(go_fd, 4) < 0 ||
        ::dup2(devnull.get(), 0) < 0) {
      ::_exit(127);
    }
    ::close_range(5, ~0u, 0);
    ::umask(InheritedUmask());
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(binary, argv.data(), environ);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (middle < 0) throw std::runtime_error(ErrnoMessage("fork the job's supervisor", fork_errno));
  CheckMiddleExit(middle);
  control_theirs.reset();
  go_theirs.reset();

  std::vector<std::string> plan = {launch.workdir.string(), launch.run, launch.progress};
  for (auto& [key, value] : launch.env) plan.push_back(key + "=" + value);
  for (auto& [key, value] : launch.env) ::explicit_bzero(value.data(), value.size());
  launch.env.clear();
  std::string bytes = EncodeStrings(plan);
  for (auto& s : plan) ::explicit_bzero(s.data(), s.size());
  try {
    WriteAllOrThrow(control_ours.get(), bytes);
  } catch (...) {
    ::explicit_bzero(bytes.data(), bytes.size());
    throw;
  }
  ::explicit_bzero(bytes.data(), bytes.size());
  ::shutdown(control_ours.get(), SHUT_WR);

  const auto deadline = Clock::now() + kReadyTimeout;
  std::string reply;
  if (!ReadAll(control_ours.get(), &reply, deadline) || reply.empty()) {
    throw std::runtime_error("the job's supervisor (" + launch.binary.string() +
                             " supervise) did not answer" +
                             (reply.empty() ? "; see the agent's log" : ": " + reply));
  }
  if (!reply.starts_with(kReadyReply)) {
    if (!reply.empty() && reply.back() == '\n') reply.pop_back();
    throw std::runtime_error("the job's supervisor: " + (reply.starts_with(kErrorReply)
                                                             ? reply.substr(kErrorReply.size())
                                                             : reply));
  }
  SpawnedSupervisor spawned;
  spawned.job_pid = static_cast<pid_t>(std::stol(reply.substr(kReadyReply.size())));
  // The job's login shell tells us on the go socket once it has read its profile and waits
  // (prepared_child.h).
  pollfd p{go_ours.get(), POLLIN, 0};
  ChildReport report;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) != 1) {
    throw std::runtime_error("preparing the job's process: no answer in " +
                             std::to_string(std::chrono::seconds(kReadyTimeout).count()) +
                             " s (a login profile that takes that long?)");
  }
  if (!ReadReport(go_ours.get(), &report)) {
    throw std::runtime_error(
        std::string("preparing the job's process: its login shell (") + kShell +
        " -l) ended before it was ready (did its profile exit?); its output is in the job's log");
  }
  if (report.step != kReady) {
    throw std::runtime_error("preparing the job's process: " + DescribeReport(report));
  }
  spawned.go = std::move(go_ours);
  return spawned;
}

std::optional<std::string> AskSupervisor(const std::filesystem::path& home, pid_t pid,
                                         std::string_view request,
                                         std::chrono::milliseconds timeout) {
  UniqueFd fd = ConnectUnix(SupervisorSocketPath(home, pid));
  if (!fd) return std::nullopt;
  const std::string line = std::string(request) + "\n";
  if (::send(fd.get(), line.data(), line.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size())) {
    return std::nullopt;
  }
  std::string reply;
  if (!ReadAll(fd.get(), &reply, Clock::now() + timeout)) return std::nullopt;
  return reply;
}

std::vector<LogRecord> FetchHeldRecords(const std::filesystem::path& home, pid_t pid,
                                        uint64_t from_seq) {
  auto reply = AskSupervisor(home, pid, LogRequest(from_seq), kFetchTimeout);
  if (!reply) return {};
  return DecodeLogRecords(*reply);
}

}  // namespace podrun::agent
