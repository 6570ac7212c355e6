// See driver_lock.h.
#include "launcher/recovery/driver_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "launcher/base/error.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

constexpr size_t kMaxRole = 64;

constexpr DriverRole kRoles[] = {DriverRole::kKeeper, DriverRole::kAttachedLaunch,
                                 DriverRole::kDetachedLaunch, DriverRole::kAttachedRerun,
                                 DriverRole::kDetachedRerun};

// The lock file, opened (created 0600 when missing, never through a symlink); -1 on failure
// when `create` is false and it does not exist.
int OpenLockFile(const std::filesystem::path& home, const std::string& job_id, bool create) {
  const std::filesystem::path path = JobDir(home, job_id) / "keeper.lock";
  const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0 && (create || errno != ENOENT)) {
    throw UsageError(path.string() +
                     ": cannot open the job's driver lock: " + std::strerror(errno));
  }
  return fd;
}

struct flock WholeFile(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  return lock;
}

// The holder's pid, read through `fd`; nullopt when nobody holds the lock.
std::optional<int> Holder(int fd) {
  struct flock lock = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) return std::nullopt;
  return static_cast<int>(lock.l_pid);
}

}  // namespace

const char* DriverRoleName(DriverRole role) {
  switch (role) {
    case DriverRole::kKeeper:
      return "keeper";
    case DriverRole::kAttachedLaunch:
      return "attached launch";
    case DriverRole::kDetachedLaunch:
      return "detached launch";
    case DriverRole::kAttachedRerun:
      return "attached rerun";
    case DriverRole::kDetachedRerun:
      return "detached rerun";
    case DriverRole::kUnknown:
      break;
  }
  return "driver";
}

std::optional<DriverLock> DriverLock::TryAcquire(const std::filesystem::path& home,
                                                 const std::string& job_id, DriverRole role) {
  const int fd = OpenLockFile(home, job_id, /*create=*/true);
  struct flock lock = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_SETLK, &lock) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  // What this driver is, for CurrentDriver (best effort: the lock is what counts).
  const std::string text = DriverRoleName(role);
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) < 0) {
    // said by nobody: CurrentDriver then reads "driver"
  }
  return DriverLock(fd);
}

DriverLock::~DriverLock() {
  if (fd_ >= 0) ::close(fd_);
}

DriverLock TakeDriverLock(const std::filesystem::path& home, const std::string& job_id,
                          DriverRole role, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    if (std::optional<DriverLock> lock = DriverLock::TryAcquire(home, job_id, role)) {
      return std::move(*lock);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Not held here: looking at the file cannot drop a lock of this process's.
  const std::optional<Driver> driver = CurrentDriver(home, job_id);
  throw UsageError(fmt::format(
      "job {} is driven by its {} (pid {} on {}): one driver per job, so this {} drives nothing "
      "(podrun logs {} -f follows it; podrun stop {} ends it)",
      job_id, DriverRoleName(driver ? driver->role : DriverRole::kUnknown),
      driver ? driver->pid : 0, driver ? driver->host : ThisHostName(), DriverRoleName(role),
      job_id, job_id));
}

std::string ThisHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::optional<int> DriverHolder(const std::filesystem::path& home, const std::string& job_id) {
  const int fd = OpenLockFile(home, job_id, /*create=*/false);
  if (fd < 0) return std::nullopt;
  const std::optional<int> holder = Holder(fd);
  ::close(fd);
  return holder;
}

std::optional<Driver> CurrentDriver(const std::filesystem::path& home, const std::string& job_id) {
  const int fd = OpenLockFile(home, job_id, /*create=*/false);
  if (fd < 0) return std::nullopt;
  const std::optional<int> holder = Holder(fd);
  char buf[kMaxRole] = {};
  const ssize_t n = holder ? ::pread(fd, buf, sizeof(buf), 0) : 0;
  ::close(fd);
  if (!holder) return std::nullopt;
  // Written by a process of this user: only a role this podrun names is taken, never shown raw.
  const std::string text(buf, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  DriverRole role = DriverRole::kUnknown;
  for (DriverRole r : kRoles) {
    if (text == DriverRoleName(r)) role = r;
  }
  return Driver{*holder, ThisHostName(), role};
}

}  // namespace podrun
