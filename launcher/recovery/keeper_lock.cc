// See keeper_lock.h.
#include "launcher/recovery/keeper_lock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/base/error.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

// The lock file, opened (created 0600 when missing, never through a symlink); -1 on failure
// when `create` is false and it does not exist.
int OpenLockFile(const std::filesystem::path& home, const std::string& job_id, bool create) {
  const std::filesystem::path path = JobDir(home, job_id) / "keeper.lock";
  const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0);
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0 && (create || errno != ENOENT)) {
    throw UsageError(path.string() + ": cannot open the keeper's lock: " + std::strerror(errno));
  }
  return fd;
}

struct flock WholeFile(short type) {
  struct flock lock {};
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  return lock;
}

}  // namespace

std::optional<KeeperLock> KeeperLock::TryAcquire(const std::filesystem::path& home,
                                                 const std::string& job_id) {
  const int fd = OpenLockFile(home, job_id, /*create=*/true);
  struct flock lock = WholeFile(F_WRLCK);
  if (::fcntl(fd, F_SETLK, &lock) != 0) {
    ::close(fd);
    return std::nullopt;
  }
  return KeeperLock(fd);
}

KeeperLock::~KeeperLock() {
  if (fd_ >= 0) ::close(fd_);
}

std::string ThisHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::optional<int> KeeperHolder(const std::filesystem::path& home, const std::string& job_id) {
  const int fd = OpenLockFile(home, job_id, /*create=*/false);
  if (fd < 0) return std::nullopt;
  struct flock lock = WholeFile(F_WRLCK);
  const int rc = ::fcntl(fd, F_GETLK, &lock);
  ::close(fd);
  if (rc != 0 || lock.l_type == F_UNLCK) return std::nullopt;
  return static_cast<int>(lock.l_pid);
}

}  // namespace podrun
