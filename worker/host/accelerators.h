// Freeing a worker's accelerators before a job runs (the spec's free_accelerators): a TPU VM's
// chips stay held by the processes of an earlier run that did not end (a Ctrl-C'd launch under
// plain SSH), and libtpu refuses to start while /tmp/libtpu_lockfile exists, even after its
// holder is gone ("TPU is already in use").
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace podrun::agent {

inline constexpr char kLibtpuLockfile[] = "/tmp/libtpu_lockfile";

// The accelerator device patterns: /dev/accel* (TPU v4 and later) and /dev/vfio/* (v2, v3).
std::vector<std::string> AcceleratorPatterns();

// Ends the processes that hold a file matching `device_patterns` open (SIGTERM, SIGKILL after
// `grace`; each identified by pid, start time and boot id before every signal), then removes
// `lockfile` if no process holds it (open or flock'ed). Files are compared by device and inode,
// so a process in another mount namespace with a path that reads the same is not taken for a
// holder. Returns what was done, one sentence each ("ended pid 123 (python3) holding
// /dev/accel0", "removed a stale /tmp/libtpu_lockfile"); failures are sentences too.
// A process holding an accelerator device.
struct AcceleratorHolder {
  int pid = 0;
  std::string command;  // /proc/<pid>/comm
  std::string device;
};

// What FreeAccelerators would act on, without touching anything: the holders of the devices
// matching `device_patterns`, and whether `lockfile` exists and is stale (nobody holds it).
std::vector<AcceleratorHolder> AcceleratorHolders(const std::vector<std::string>& device_patterns);
// The devices matching `device_patterns` that the processes `pids` hold open, sorted, each once
// (`podrun top`: the chips a job uses). Looks only at those processes' descriptors.
std::vector<std::string> AcceleratorsHeldBy(const std::vector<std::string>& device_patterns,
                                            const std::vector<pid_t>& pids);
struct LockfileState {
  bool exists = false;
  bool stale = false;
};
LockfileState InspectLockfile(const std::filesystem::path& lockfile);

// Only processes of this agent's own user are signalled unless `all_users` (another user's
// holder is named and left); each is signalled through a pidfd taken after it was identified.
std::vector<std::string> FreeAccelerators(const std::vector<std::string>& device_patterns,
                                          const std::filesystem::path& lockfile,
                                          std::chrono::milliseconds grace, bool all_users = false);

}  // namespace podrun::agent
