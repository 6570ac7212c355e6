// The spec's `mounts:` on one worker (docs/reference.md; docs/design.md decision 11): each type is
// a driver that turns an entry into the command lines that mount it, run before setup. Idempotent:
// a mount point already in /proc/self/mountinfo with the asked filesystem is left as it is (another
// filesystem there is an error). Where the SSH user is not root, the commands that need root run
// through `sudo -n` (never a password prompt); FUSE mounts (gcsfuse, sshfs) run as the user.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "proto/run_program.h"

namespace podrun::agent {

struct MountEntry {
  std::string type;        // nfs, gcsfuse, sshfs, bind
  int server_worker = -1;  // nfs: the worker that exports (index), -1: an outside server
  std::string server;      // nfs: the server's address as the workers reach it
  std::string export_path;
  std::string bucket;
  std::string source;   // sshfs: HOST:PATH (HOST already resolved); bind: a directory
  std::string path;     // the mount point, absolute
  std::string options;  // "" or comma-separated mount options
};

struct MountContext {
  int worker_id = 0;
  std::vector<std::string> peer_addresses;  // every worker's internal address, by index
  bool root = true;                         // the agent runs as root: no sudo
  bool have_exportfs = true;                // nfs server: the NFS server package is installed
};

// The command lines that mount `m` on this worker, in order (the mount point created first).
std::vector<std::vector<std::string>> MountCommands(const MountEntry& m, const MountContext& c);

// What /proc/self/mountinfo says is mounted on a path.
struct MountedFilesystem {
  std::string type;    // e.g. "nfs4", "fuse.sshfs", "ext4"
  std::string source;  // e.g. "10.0.0.2:/srv/share"
};

// The filesystem mounted on `path` according to `mountinfo` (the last mount there), if any.
std::optional<MountedFilesystem> MountedAt(const std::string& mountinfo, const std::string& path);

// Refuses (std::runtime_error) an existing mount point that is a symlink or belongs to a user
// other than root and the agent's own: nothing is mounted through another user's path.
void CheckMountPoint(const std::string& path);

// True when `path` is a mount point according to `mountinfo` (/proc/self/mountinfo's text;
// octal escapes in mount points decoded).
bool IsMountPoint(const std::string& mountinfo, const std::string& path);

using ProgramRunner = std::function<ProgramResult(const std::vector<std::string>& argv)>;

// Mounts each entry not mounted yet, in order; returns what was done, a sentence per entry
// ("mounted /data on /mnt/data (bind)", "/mnt/data: already mounted"). Throws
// std::runtime_error naming the mount, the failing command and its error output.
std::vector<std::string> ApplyMounts(const std::vector<MountEntry>& mounts,
                                     const MountContext& context, const ProgramRunner& run,
                                     const std::function<std::string()>& read_mountinfo);

}  // namespace podrun::agent
