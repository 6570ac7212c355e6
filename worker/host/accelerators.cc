// Freeing a worker's accelerators (see accelerators.h).
#include "worker/host/accelerators.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "proto/process_identity.h"
#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

using FileId = std::pair<dev_t, ino_t>;
using Clock = std::chrono::steady_clock;

std::optional<FileId> IdOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

std::string CommandName(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name.empty() ? "?" : name;
}

// The files of `files` that process `pid` has a descriptor open on (each once, in fd order); at
// most one with `first_only`. Empty for a process that is gone or not ours to look at.
std::vector<std::string> FilesHeldBy(pid_t pid, const std::map<FileId, std::string>& files,
                                     bool first_only) {
  std::vector<std::string> held;
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  DIR* fds = ::opendir(fd_dir.c_str());
  if (!fds) return held;  // gone, or another user's
  while (dirent* fd = ::readdir(fds)) {
    if (fd->d_name[0] == '.') continue;
    if (auto id = IdOf(fd_dir + "/" + fd->d_name)) {
      auto it = files.find(*id);
      if (it == files.end() || std::find(held.begin(), held.end(), it->second) != held.end()) {
        continue;
      }
      held.push_back(it->second);
      if (first_only) break;
    }
  }
  ::closedir(fds);
  return held;
}

// Processes (but this one) with a descriptor open on one of `files`, and which file.
std::map<pid_t, std::string> Holders(const std::map<FileId, std::string>& files) {
  std::map<pid_t, std::string> holders;
  if (files.empty()) return holders;
  DIR* proc = ::opendir("/proc");
  if (!proc) return holders;
  while (dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    const char* name = entry->d_name;
    const char* end = name + std::strlen(name);
    if (std::from_chars(name, end, pid).ptr != end || pid <= 0 || pid == ::getpid()) continue;
    if (auto held = FilesHeldBy(pid, files, /*first_only=*/true); !held.empty()) {
      holders[pid] = held.front();
    }
  }
  ::closedir(proc);
  return holders;
}

// The chips matching the patterns, by device and inode.
std::map<FileId, std::string> Devices(const std::vector<std::string>& device_patterns) {
  std::map<FileId, std::string> devices;
  for (const std::string& pattern : device_patterns) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        // /dev/vfio/vfio is the container, not a chip: every VFIO user holds it.
        if (std::string(g.gl_pathv[i]) == "/dev/vfio/vfio") continue;
        if (auto id = IdOf(g.gl_pathv[i])) devices[*id] = g.gl_pathv[i];
      }
    }
    ::globfree(&g);
  }
  return devices;
}

}  // namespace

std::vector<AcceleratorHolder> AcceleratorHolders(const std::vector<std::string>& device_patterns) {
  std::vector<AcceleratorHolder> holders;
  for (const auto& [pid, device] : Holders(Devices(device_patterns))) {
    holders.push_back({pid, CommandName(pid), device});
  }
  return holders;
}

std::vector<std::string> AcceleratorsHeldBy(const std::vector<std::string>& device_patterns,
                                            const std::vector<pid_t>& pids) {
  std::set<std::string> held;
  const std::map<FileId, std::string> devices = Devices(device_patterns);
  if (devices.empty()) return {};
  for (pid_t pid : pids) {
    for (std::string& device : FilesHeldBy(pid, devices, /*first_only=*/false)) {
      held.insert(std::move(device));
    }
  }
  return {held.begin(), held.end()};
}

LockfileState InspectLockfile(const std::filesystem::path& lockfile) {
  LockfileState state;
  const auto id = IdOf(lockfile);
  if (!id) return state;
  state.exists = true;
  UniqueFd fd(::open(lockfile.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  const bool locked = fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  fd.reset();
  state.stale = !locked && Holders({{*id, lockfile.string()}}).empty();
  return state;
}

std::vector<std::string> AcceleratorPatterns() { return {"/dev/accel*", "/dev/vfio/*"}; }

namespace {

// A holder being ended: a pidfd pins the very process that was identified, so no signal can
// reach another process that got its pid meanwhile.
struct Ending {
  UniqueFd pidfd;
  std::string what;  // "pid 123 (python3) holding /dev/accel0"
};

// The pidfd calls, through syscall(2): glibc 2.36's <sys/pidfd.h> declares them without C
// linkage for C++.
int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSignal(const UniqueFd& pidfd, int sig) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0));
}

// True once the process of `pidfd` has exited (its pidfd reads as ready).
bool Exited(const UniqueFd& pidfd) {
  pollfd p{pidfd.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

// The user owning process `pid` (of its /proc entry: its effective uid); nullopt if it is gone.
std::optional<uid_t> OwnerOf(pid_t pid) {
  struct stat st {};
  if (::stat(("/proc/" + std::to_string(pid)).c_str(), &st) != 0) return std::nullopt;
  return st.st_uid;
}

}  // namespace

std::vector<std::string> FreeAccelerators(const std::vector<std::string>& device_patterns,
                                          const std::filesystem::path& lockfile,
                                          std::chrono::milliseconds grace, bool all_users) {
  std::vector<std::string> actions;
  const std::map<FileId, std::string> devices = Devices(device_patterns);
  // SIGTERM to every holder, then SIGKILL to those still there after the grace period.
  std::vector<Ending> ended;
  for (const auto& [pid, device] : Holders(devices)) {
    const std::string what =
        "pid " + std::to_string(pid) + " (" + CommandName(pid) + ") holding " + device;
    const auto owner = OwnerOf(pid);
    if (!owner) continue;  // gone already
    if (!all_users && *owner != ::geteuid()) {
      actions.push_back("left " + what + ": it belongs to uid " + std::to_string(*owner) +
                        ", not to this agent's user (`podrun doctor --fix --all-users` ends it)");
      continue;
    }
    auto id = ProcessIdentity::Of(pid);
    UniqueFd pidfd(PidfdOpen(pid));
    // Opened after the identity was read: the same identity now means the pidfd is that process.
    if (!id || !pidfd || ProcessIdentity::Of(pid) != id) {
      if (!pidfd && errno != ESRCH) {
        actions.push_back("could not end " + what + ": pidfd_open: " + std::strerror(errno));
      }
      continue;
    }
    if (PidfdSignal(pidfd, SIGTERM) != 0) {
      if (errno != ESRCH) {
        actions.push_back("could not end " + what + ": " + std::strerror(errno));
      }
      continue;
    }
    ended.push_back({std::move(pidfd), what});
  }
  const auto deadline = Clock::now() + grace;
  auto any_alive = [&] {
    return std::any_of(ended.begin(), ended.end(),
                       [](const Ending& e) { return !Exited(e.pidfd); });
  };
  while (any_alive() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const Ending& e : ended) {
    if (!Exited(e.pidfd)) {
      PidfdSignal(e.pidfd, SIGKILL);
      actions.push_back("killed " + e.what + " (SIGKILL after " + std::to_string(grace.count()) +
                        " ms)");
    } else {
      actions.push_back("ended " + e.what);
    }
  }
  // The lockfile is stale when nobody has it open and nobody holds its lock.
  if (auto id = IdOf(lockfile)) {
    for (int i = 0; i < 250 && any_alive(); ++i) {  // killed holders of the chips may hold it
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto holders = Holders({{*id, lockfile.string()}});
    UniqueFd fd(::open(lockfile.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    const bool locked = fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    if (!holders.empty()) {
      const auto& [pid, path] = *holders.begin();
      actions.push_back("left " + lockfile.string() + ": pid " + std::to_string(pid) + " (" +
                        CommandName(pid) + ") holds it");
    } else if (locked) {
      actions.push_back("left " + lockfile.string() + ": another process holds its lock");
    } else if (::unlink(lockfile.c_str()) == 0) {
      actions.push_back("removed a stale " + lockfile.string());
    } else {
      actions.push_back("could not remove a stale " + lockfile.string() + ": " +
                        std::strerror(errno));
    }
  }
  return actions;
}

}  // namespace podrun::agent
