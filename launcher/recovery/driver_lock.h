// DriverLock: at most one process drives a job at a time (docs/design.md decision 21;
// docs/reference.md, "Provisioning and recovery"): an attached launch or rerun, or a keeper.
// The driver holds a POSIX write lock on $PODRUN_HOME/jobs/<id>/keeper.lock (the name an older
// podrun's keeper locks, so that one still running counts) for its whole life; the kernel drops
// it when the process dies however it dies (SIGKILL included), so the lock, not a recorded pid,
// says whether a driver runs. The file also says what the driver is ("keeper", "attached
// launch"), for `podrun watch` beside it. Holds on one machine (a PODRUN_HOME on NFS is not
// supported for this). POSIX locks go when their process closes ANY descriptor of the file:
// the driver itself must never call DriverHolder or CurrentDriver.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace podrun {

// What drives a job; written into the lock file, for `podrun watch` and refusals beside it.
enum class DriverRole {
  kKeeper,
  kAttachedLaunch,
  kDetachedLaunch,
  kAttachedRerun,
  kDetachedRerun,
  kUnknown,  // a lock file that names no role this podrun knows (an older or newer one's)
};

// "keeper", "attached launch", "detached launch", "attached rerun", "detached rerun"; "driver"
// for kUnknown.
const char* DriverRoleName(DriverRole role);

class DriverLock {
 public:
  // Takes the job's lock as `role`; nullopt when another
  // process holds it. Throws podrun::Error (kUsage) when the lock file cannot be opened (a
  // symlink planted there is refused).
  static std::optional<DriverLock> TryAcquire(const std::filesystem::path& home,
                                              const std::string& job_id,
                                              DriverRole role = DriverRole::kKeeper);
  DriverLock(DriverLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DriverLock& operator=(DriverLock&&) = delete;
  DriverLock(const DriverLock&) = delete;
  ~DriverLock();

 private:
  explicit DriverLock(int fd) : fd_(fd) {}
  int fd_;
};

// The job's lock for a driver that starts now as `role` (an attached launch, ...), waiting up to
// `wait` for another holder to let it go (a keeper that `podrun watch` started for a job that has
// no attempt yet ends at once). Throws Error(kUsage) naming the holder (role, pid, host) when it
// still holds it then: one driver per job, never two side by side.
DriverLock TakeDriverLock(const std::filesystem::path& home, const std::string& job_id,
                          DriverRole role,
                          std::chrono::milliseconds wait = std::chrono::seconds(10));

// This machine's name (gethostname), as a driver records where it runs; "" if unknown.
std::string ThisHostName();

// The pid of the process holding the job's driver lock on this machine, if any (0 or less: a
// holder in another pid namespace).
std::optional<int> DriverHolder(const std::filesystem::path& home, const std::string& job_id);

// Who drives the job on this machine: the lock's holder and what it said it is.
struct Driver {
  int pid = 0;
  std::string host;                        // this machine's
  DriverRole role = DriverRole::kUnknown;  // kUnknown if unsaid
};
std::optional<Driver> CurrentDriver(const std::filesystem::path& home, const std::string& job_id);

}  // namespace podrun
