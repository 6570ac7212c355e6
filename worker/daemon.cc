// Daemonizing with an announcement pipe, and the start lock (see daemon.h).
#include "worker/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "proto/write_all.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How long the original process waits for the daemon's announcement.
constexpr auto kAnnounceTimeout = std::chrono::seconds(60);
constexpr auto kLockRetryInterval = std::chrono::milliseconds(20);
constexpr size_t kMaxAnnouncementBytes = 4096;

// In the original process: reads the daemon's line and relays it; returns the exit code.
int RelayAnnouncement(UniqueFd pipe, const std::filesystem::path& log_file) {
  std::string line;
  const auto deadline = Clock::now() + kAnnounceTimeout;
  while (line.find('\n') == std::string::npos && line.size() < kMaxAnnouncementBytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{pipe.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    char buf[512];
    ssize_t n = ::read(pipe.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
  }
  line = line.substr(0, line.find('\n'));
  if (line.empty()) {
    line = std::string(kErrorPrefix) +
           " the agent exited during startup without announcing "
           "itself; see " +
           log_file.string();
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return line.starts_with(kReadyPrefix) ? 0 : 1;
}

// Closes every fd above stderr except `keep`: the daemon must not hold open a pipe or socket
// its starter waits on (a launcher's pipes, an SSH session's extra fds).
void CloseInheritedFds(int keep) {
  std::vector<int> fds;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    if (fd > STDERR_FILENO && fd != keep) fds.push_back(fd);
  }
  for (int fd : fds) ::close(fd);  // includes the directory's own fd, already closed: harmless
}

}  // namespace

Announcer::Announcer() : fd_(::dup(STDOUT_FILENO)) {}

void Announcer::Send(const std::string& line) {
  if (sent_) {
    std::fprintf(stderr, "podrun-agent: %s\n", line.c_str());
    return;
  }
  sent_ = true;
  WriteAll(fd_.get(), line + "\n");
  fd_.reset();  // the waiting process sees EOF right after the line
}

void Announcer::Ready(uint32_t protocol_version, const std::string& agent_version,
                      const std::string& socket_path) {
  Send(std::string(kReadyPrefix) + " " + std::to_string(protocol_version) + " " + agent_version +
       " " + socket_path);
}

void Announcer::Error(const std::string& reason) {
  std::string flat = reason;
  for (char& c : flat) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  Send(std::string(kErrorPrefix) + " " + flat);
}

Daemonized Daemonize(const std::filesystem::path& log_file) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (child > 0) {  // the original process
    write_end.reset();
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    return {false, RelayAnnouncement(std::move(read_end), log_file), Announcer(UniqueFd())};
  }
  // The intermediate child: a new session, then the daemon, which can never regain a tty.
  read_end.reset();
  ::setsid();
  const pid_t daemon = ::fork();
  if (daemon != 0) ::_exit(daemon < 0 ? 1 : 0);

  CloseInheritedFds(write_end.get());
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  UniqueFd log(
      ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (devnull) ::dup2(devnull.get(), STDIN_FILENO);
  if (log) {
    ::dup2(log.get(), STDOUT_FILENO);
    ::dup2(log.get(), STDERR_FILENO);
  }
  if (::chdir("/") != 0) {
    // Staying in the start directory is harmless.
  }
  return {true, 0, Announcer(std::move(write_end))};
}

FileLock FileLock::Acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw std::runtime_error(path.string() + ": " + std::strerror(errno));
  const auto deadline = Clock::now() + timeout;
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      throw std::runtime_error("lock " + path.string() + ": " + std::strerror(errno));
    }
    if (Clock::now() >= deadline) {
      throw std::runtime_error("lock " + path.string() +
                               " is held: another podrun-agent is starting or stopping");
    }
    std::this_thread::sleep_for(kLockRetryInterval);
  }
  return FileLock(std::move(fd));
}

}  // namespace podrun::agent
