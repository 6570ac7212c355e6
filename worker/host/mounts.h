// The spec's `mounts:` on one worker (docs/reference.md; docs/design.md decisions 9 and 14): each
// type is a driver that turns an entry into the command lines that mount it, run before setup.
// Idempotent: a mount point already in /proc/self/mountinfo with the asked filesystem (the same
// type and the same source; for FUSE, which lets any user name its source, also mounted by the
// agent's user or root) is left as it is, once its path has been walked like a new mount point's;
// anything else there is an error. The mount point is
// reached one component at a time, refusing a symlink or another user's directory, and the mount
// is made on the descriptor those checks opened (/proc/.../fd/N), never on the path again. Where
// the SSH user is not root, the commands that need root run through `sudo -n` (never a password
// prompt); FUSE mounts (gcsfuse, sshfs) run as the user.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "proto/run_program.h"
#include "proto/unique_fd.h"

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
  uid_t uid = 0;                            // the agent's user: may own a FUSE mount podrun uses
};

// The command lines that mount `m` on this worker, in order, onto `target`: the mount point as
// the commands reach it (a /proc/.../fd/N path of the descriptor OpenMountPoint opened; util-linux
// `mount` is told --no-canonicalize so that it does not turn it back into a path).
std::vector<std::vector<std::string>> MountCommands(const MountEntry& m, const MountContext& c,
                                                    const std::string& target);

// For a bind mount with options: the command that applies them to the new mount, reached as
// `target` (its root, opened again once mounted).
std::vector<std::string> RemountCommand(const MountEntry& m, const MountContext& c,
                                        const std::string& target);

// What /proc/self/mountinfo says is mounted on a path.
struct MountedFilesystem {
  std::string type;    // e.g. "nfs4", "fuse.sshfs", "ext4"
  std::string source;  // e.g. "10.0.0.2:/srv/share"
  // A FUSE mount's owner: the user_id= of its superblock options (set by the kernel from the
  // user who mounted it: fusermount cannot be told another); nullopt when not said.
  std::optional<uid_t> fuse_owner;
};

// The filesystem mounted on `path` according to `mountinfo` (the last mount there), if any.
std::optional<MountedFilesystem> MountedAt(const std::string& mountinfo, const std::string& path);

// Makes directory `name` in the directory open as `parent_fd` (`parent` its path, for messages);
// throws std::runtime_error saying why it could not.
using MakeDirFn =
    std::function<void(int parent_fd, const std::string& parent, const std::string& name)>;

// Opens the directory `path` (absolute) one component at a time from "/", each with
// O_PATH|O_NOFOLLOW|O_DIRECTORY relative to the one before, and returns the last one's
// descriptor. A component that is a symlink, not a directory, "..", or a directory owned by a uid
// other than root and `uid` is refused: std::runtime_error naming the path and the component.
// A missing component is made by `make_dir` (then opened and checked like the others).
UniqueFd OpenMountPoint(const std::string& path, uid_t uid, const MakeDirFn& make_dir);

// True when `path` is a mount point according to `mountinfo` (/proc/self/mountinfo's text;
// octal escapes in mount points decoded).
bool IsMountPoint(const std::string& mountinfo, const std::string& path);

using ProgramRunner = std::function<ProgramResult(const std::vector<std::string>& argv)>;

// Whether what `seen` on m.path is the entry's own mount: the same type and the same source; for
// gcsfuse and sshfs (whose source, the fsname, any user may choose) also mounted by c.uid or root.
// A bind mount shows only its device in mountinfo, so for one (and the NFS server's bind of its
// export) the mount point must be the source directory itself (the same device and inode).
bool IsWhatWasAsked(const MountEntry& m, const MountContext& c, const MountedFilesystem& seen);

// Walks a path already mounted on before it is taken as mounted: its parent as OpenMountPoint
// walks it (no symlink, no directory of another user; nothing made), and the mount point itself
// is not a symlink. Throws std::runtime_error naming the path and the component.
void CheckMountedPath(const std::string& path, uid_t uid);

// Mounts each entry not mounted yet, in order; returns what was done, a sentence per entry
// ("mounted /data on /mnt/data (bind)", "/mnt/data: already mounted"). The mount point is
// opened by OpenMountPoint (missing directories made, through `run` and sudo where the agent
// may not) and each command mounts onto its descriptor. Throws std::runtime_error naming the
// mount, and the refused component or the failing command and its error output.
std::vector<std::string> ApplyMounts(const std::vector<MountEntry>& mounts,
                                     const MountContext& context, const ProgramRunner& run,
                                     const std::function<std::string()>& read_mountinfo);

}  // namespace podrun::agent
