// KeeperLock: at most one keeper per job (docs/reference.md, "Provisioning and recovery"). The
// keeper holds a POSIX write lock on $PODRUN_HOME/jobs/<id>/keeper.lock for its whole life; the
// kernel drops it when the process dies however it dies (SIGKILL included), so the lock, not a
// recorded pid, says whether a keeper runs. Holds on one machine (a PODRUN_HOME on NFS is not
// supported for this). POSIX locks go when their process closes ANY descriptor of the file:
// the keeper itself must never call KeeperHolder.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace podrun {

class KeeperLock {
 public:
  // Takes the job's lock; nullopt when another process holds it. Throws podrun::Error (kUsage)
  // when the lock file cannot be opened (a symlink planted there is refused).
  static std::optional<KeeperLock> TryAcquire(const std::filesystem::path& home,
                                              const std::string& job_id);
  KeeperLock(KeeperLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  KeeperLock& operator=(KeeperLock&&) = delete;
  KeeperLock(const KeeperLock&) = delete;
  ~KeeperLock();

 private:
  explicit KeeperLock(int fd) : fd_(fd) {}
  int fd_;
};

// This machine's name (gethostname), as a keeper records where it runs; "" if unknown.
std::string ThisHostName();

// The pid of the process holding the job's keeper lock on this machine, if any.
std::optional<int> KeeperHolder(const std::filesystem::path& home, const std::string& job_id);

}  // namespace podrun
