// Finding or starting the connection holder.
#include "launcher/persist/holder_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "launcher/persist/holder_server.h"
#include "proto/spawn.h"
#include "proto/unique_fd.h"

namespace podrun {
namespace {

constexpr int kListenBacklog = 1024;

sockaddr_un AddressOf(const std::filesystem::path& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  return address;
}

enum class Probe { kAlive, kAbsent, kUnusable };

// Connects to the socket once: a holder of this user's answers (kAlive); nothing there or
// nothing listening (a holder that died) is kAbsent; anything else (a full backlog, another
// user at the other end) is kUnusable, and left alone.
Probe ProbeHolder(const std::filesystem::path& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return Probe::kUnusable;
  const sockaddr_un address = AddressOf(path);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return errno == ENOENT || errno == ECONNREFUSED ? Probe::kAbsent : Probe::kUnusable;
  }
  ucred peer{};
  socklen_t length = sizeof peer;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
      peer.uid != ::geteuid()) {
    return Probe::kUnusable;
  }
  return Probe::kAlive;  // closed unasked: the holder reads EOF and forgets it
}

std::optional<std::string> StartHolder(const HolderPaths& paths, const std::string& program) {
  if (auto problem = SocketPathProblem(paths.socket)) return problem;
  if (::unlink(paths.socket.c_str()) != 0 && errno != ENOENT) {
    return fmt::format("{}: {}", paths.socket.string(), std::strerror(errno));
  }
  UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) return fmt::format("socket: {}", std::strerror(errno));
  const sockaddr_un address = AddressOf(paths.socket);
  // Made under the launcher's umask 077; fchmod cannot reach a socket's file, chmod can.
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
      ::chmod(paths.socket.c_str(), 0600) != 0 || ::listen(listener.get(), kListenBacklog) != 0) {
    return fmt::format("{}: {}", paths.socket.string(), std::strerror(errno));
  }
  UniqueFd log(
      ::open(paths.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!log) return fmt::format("{}: {}", paths.log.string(), std::strerror(errno));
  constexpr int kChildListenFd = 3;
  pid_t pid = 0;
  try {
    pid = SpawnProcess({.argv = {"podrun", kHolderCommand, "--fd", std::to_string(kChildListenFd)},
                        .program = program,
                        .fds = {{STDIN_FILENO, kSpawnDevNull},
                                {STDOUT_FILENO, kSpawnDevNull},
                                {STDERR_FILENO, log.get()},
                                {kChildListenFd, listener.get()}},
                        .group = SpawnGroup::kNewSession,
                        .cwd = "/"});
  } catch (const SpawnError& e) {
    ::unlink(paths.socket.c_str());
    return e.what();
  }
  // It forks the holder and exits at once (RunHolder): reap it, no zombie stays behind.
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return std::nullopt;
}

}  // namespace

HolderRequest HolderRequestFor(const HostSpec& target, const SshOptions& ssh, std::string command) {
  HolderRequest request;
  request.target = target;
  request.ssh = ssh;
  auto absolute = [](std::string& path) {
    if (!path.empty() && path[0] != '/' && path[0] != '~') {
      path = std::filesystem::absolute(path).lexically_normal().string();
    }
  };
  if (request.ssh.identity) absolute(*request.ssh.identity);
  if (request.ssh.ssh_config) absolute(*request.ssh.ssh_config);
  absolute(request.ssh.known_hosts);
  request.command = std::move(command);
  request.persist = PersistSeconds();
  const char* auth_sock = std::getenv("SSH_AUTH_SOCK");
  const char* home = std::getenv("HOME");
  request.auth_sock = auth_sock != nullptr ? auth_sock : "";
  request.home = home != nullptr ? home : "";
  return request;
}

bool PersistWanted(bool no_persist_flag) {
  if (no_persist_flag) return false;
  const char* value = std::getenv("PODRUN_PERSIST");
  return value == nullptr || std::string(value) != "0";
}

std::chrono::seconds PersistSeconds() {
  if (const char* value = std::getenv("PODRUN_PERSIST_SECONDS")) {
    char* end = nullptr;
    const long seconds = std::strtol(value, &end, 10);
    if (end != value && *end == '\0' && seconds > 0) return std::chrono::seconds(seconds);
  }
  return std::chrono::seconds(600);
}

std::optional<HolderClient> HolderClient::Reach(const std::filesystem::path& podrun_home,
                                                std::string* why, const std::string& program) {
  auto fail = [&](std::string reason) -> std::optional<HolderClient> {
    if (why != nullptr) *why = std::move(reason);
    return std::nullopt;
  };
  HolderPaths paths = HolderPathsIn(podrun_home);
  if (auto problem = PrepareHolderDir(paths)) return fail(*problem);
  Probe probe = ProbeHolder(paths.socket);
  if (probe == Probe::kAlive) return HolderClient(std::move(paths));
  if (probe == Probe::kUnusable) return fail("the holder's socket does not answer");
  UniqueFd lock(::open(paths.lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) return fail(fmt::format("{}: {}", paths.lock.string(), std::strerror(errno)));
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) return fail(fmt::format("flock: {}", std::strerror(errno)));
  }
  probe = ProbeHolder(paths.socket);  // another command may have started one meanwhile
  if (probe == Probe::kAlive) return HolderClient(std::move(paths));
  if (probe == Probe::kUnusable) return fail("the holder's socket does not answer");
  if (auto problem = StartHolder(paths, program)) return fail(*problem);
  return HolderClient(std::move(paths));
}

}  // namespace podrun
