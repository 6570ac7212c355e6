// See mounts.h.
#include "worker/host/mounts.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace podrun::agent {
namespace {

// argv, through `sudo -n` when the agent is not root.
std::vector<std::string> AsRoot(const MountContext& c, std::vector<std::string> argv) {
  if (!c.root) argv.insert(argv.begin(), {"sudo", "-n"});
  return argv;
}

void AddOptions(const MountEntry& m, std::vector<std::string>* argv) {
  if (m.options.empty()) return;
  argv->push_back("-o");
  argv->push_back(m.options);
}

// "mounted SOURCE on PATH (TYPE)".
std::string Describe(const MountEntry& m) {
  std::string source = m.type == "gcsfuse" ? "gs://" + m.bucket
                       : m.type == "nfs"   ? m.server + ":" + m.export_path
                                           : m.source;
  return source + " on " + m.path + " (" + m.type + ")";
}

std::string Unescape(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const std::string digits = field.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string::npos) {
        out += static_cast<char>(std::stoi(digits, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

// Whether `a` and `b` are the same directory (device and inode), both existing.
bool SameDirectory(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

// The user_id= of a FUSE superblock's options ("rw,user_id=1000,group_id=1000").
std::optional<uid_t> FuseOwner(const std::string& options) {
  std::istringstream list(options);
  for (std::string option; std::getline(list, option, ',');) {
    if (!option.starts_with("user_id=")) continue;
    const std::string digits = option.substr(8);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        digits.size() > 10) {
      return std::nullopt;
    }
    return static_cast<uid_t>(std::stoul(digits));
  }
  return std::nullopt;
}

// The descriptor `fd` of this process as a path another process (root, through sudo) can use.
std::string FdPath(pid_t pid, int fd) {
  return "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
}

}  // namespace

bool IsWhatWasAsked(const MountEntry& m, const MountContext& c, const MountedFilesystem& seen) {
  if (m.type == "nfs" && m.server_worker != c.worker_id) {
    return seen.type.starts_with("nfs") && seen.source == m.server + ":" + m.export_path;
  }
  if (m.type == "nfs") return SameDirectory(m.export_path, m.path);  // the server's own bind
  const bool owned = seen.fuse_owner && (*seen.fuse_owner == 0 || *seen.fuse_owner == c.uid);
  if (m.type == "gcsfuse") {
    return seen.type == "fuse.gcsfuse" && seen.source == m.bucket && owned;
  }
  if (m.type == "sshfs") return seen.type == "fuse.sshfs" && seen.source == m.source && owned;
  if (m.type == "bind") return SameDirectory(m.source, m.path);
  return false;
}

std::vector<std::vector<std::string>> MountCommands(const MountEntry& m, const MountContext& c,
                                                    const std::string& target) {
  std::vector<std::vector<std::string>> commands;
  if (m.type == "bind") {
    // Options apply by a remount of the new mount's root (RemountCommand): `mount --bind -o`
    // would remount `target` itself, which is the directory beneath.
    commands.push_back(AsRoot(c, {"mount", "--no-canonicalize", "--bind", m.source, target}));
  } else if (m.type == "nfs" && m.server_worker == c.worker_id) {
    // This worker serves the export, to the pod's internal addresses only, and uses it itself.
    if (!c.have_exportfs) {
      commands.push_back(AsRoot(c, {"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install",
                                    "-y", "nfs-kernel-server"}));
    }
    commands.push_back(AsRoot(c, {"mkdir", "-p", m.export_path}));
    for (size_t i = 0; i < c.peer_addresses.size(); ++i) {
      if (static_cast<int>(i) == c.worker_id) continue;
      // root_squash: root on a peer is nobody on the share.
      commands.push_back(AsRoot(c, {"exportfs", "-o", "rw,sync,no_subtree_check,root_squash",
                                    c.peer_addresses[i] + ":" + m.export_path}));
    }
    if (m.export_path != m.path) {
      commands.push_back(
          AsRoot(c, {"mount", "--no-canonicalize", "--bind", m.export_path, target}));
    }
  } else if (m.type == "nfs") {
    // nosuid,nodev first: a share's setuid file or device node gives nothing on this worker,
    // unless the spec's own options (later, so they win) ask for suid or dev.
    std::vector<std::string> argv = {
        "mount", "--no-canonicalize",
        "-t",    "nfs",
        "-o",    "nosuid,nodev" + (m.options.empty() ? "" : "," + m.options)};
    argv.push_back(m.server + ":" + m.export_path);
    argv.push_back(target);
    commands.push_back(AsRoot(c, argv));
  } else if (m.type == "gcsfuse") {
    std::vector<std::string> argv = {"gcsfuse", "--implicit-dirs"};
    AddOptions(m, &argv);
    argv.push_back(m.bucket);
    argv.push_back(target);
    commands.push_back(argv);
  } else if (m.type == "sshfs") {
    std::vector<std::string> argv = {"sshfs"};
    AddOptions(m, &argv);
    argv.push_back(m.source);
    argv.push_back(target);
    commands.push_back(argv);
  } else {
    throw std::runtime_error("unknown mount type '" + m.type + "'");
  }
  return commands;
}

std::vector<std::string> RemountCommand(const MountEntry& m, const MountContext& c,
                                        const std::string& target) {
  return AsRoot(c, {"mount", "--no-canonicalize", "-o", "remount,bind," + m.options, target});
}

std::optional<MountedFilesystem> MountedAt(const std::string& mountinfo, const std::string& path) {
  // Each line: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER.
  // The last mount on a path is the one seen there.
  std::optional<MountedFilesystem> found;
  std::istringstream lines(mountinfo);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string word; fields >> word;) f.push_back(word);
    if (f.size() < 5 || Unescape(f[4]) != path) continue;
    MountedFilesystem m;
    for (size_t i = 5; i + 2 < f.size(); ++i) {
      if (f[i] == "-") {
        m.type = f[i + 1];
        m.source = Unescape(f[i + 2]);
        if (i + 3 < f.size()) m.fuse_owner = FuseOwner(f[i + 3]);
        break;
      }
    }
    found = m;
  }
  return found;
}

bool IsMountPoint(const std::string& mountinfo, const std::string& path) {
  return MountedAt(mountinfo, path).has_value();
}

UniqueFd OpenMountPoint(const std::string& path, uid_t uid, const MakeDirFn& make_dir) {
  auto refuse = [&](const std::string& component, const std::string& why) {
    throw std::runtime_error("mount point " + path + ": " + component + " " + why +
                             "; nothing is mounted through it");
  };
  if (path.empty() || path[0] != '/') refuse(path, "is not an absolute path");
  UniqueFd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) refuse("/", std::string("cannot be opened: ") + std::strerror(errno));
  std::string reached;  // the components opened so far, as a path
  std::istringstream components(path);
  for (std::string name; std::getline(components, name, '/');) {
    if (name.empty() || name == ".") continue;
    const std::string parent = reached.empty() ? "/" : reached;
    reached += "/" + name;
    if (name == "..") refuse(reached, "goes up (..)");
    UniqueFd next(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
    if (!next && errno == ENOENT) {
      make_dir(dir.get(), parent, name);
      next.reset(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC));
    }
    if (!next) {
      const int err = errno;
      struct stat st {};
      if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
          S_ISLNK(st.st_mode)) {
        refuse(reached, "is a symlink; give the real path");
      }
      if (err == ENOTDIR || err == ELOOP) refuse(reached, "is not a directory");
      refuse(reached, std::string("cannot be opened: ") + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(next.get(), &st) != 0)
      refuse(reached, std::string("cannot be read: ") + std::strerror(errno));
    if (st.st_uid != 0 && st.st_uid != uid) {
      refuse(reached, "is owned by uid " + std::to_string(st.st_uid) +
                          ", another user; mount on a path of root's or your own");
    }
    dir = std::move(next);
  }
  return dir;
}

void CheckMountedPath(const std::string& path, uid_t uid) {
  const size_t slash = path.find_last_of('/');
  if (path.empty() || path[0] != '/' || slash == std::string::npos) {
    throw std::runtime_error("mount point " + path + ": is not an absolute path");
  }
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = path.substr(slash + 1);
  const UniqueFd dir =
      OpenMountPoint(parent, uid, [&](int, const std::string&, const std::string&) {
        throw std::runtime_error("mount point " + path + ": " + parent + " does not exist");
      });
  struct stat st {};
  if (!name.empty() && ::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
      S_ISLNK(st.st_mode)) {
    throw std::runtime_error("mount point " + path + ": " + path +
                             " is a symlink; give the real path; nothing is mounted through it");
  }
}

std::vector<std::string> ApplyMounts(const std::vector<MountEntry>& mounts,
                                     const MountContext& context, const ProgramRunner& run,
                                     const std::function<std::string()>& read_mountinfo) {
  const pid_t self = ::getpid();
  // A directory the agent may not make (not root, a root-owned parent) is made through sudo, in
  // the parent it opened.
  const MakeDirFn make_dir = [&](int parent_fd, const std::string& parent,
                                 const std::string& name) {
    if (::mkdirat(parent_fd, name.c_str(), 0755) == 0 || errno == EEXIST) return;
    const int err = errno;
    const std::string where = (parent == "/" ? "" : parent) + "/" + name;
    if (context.root || (err != EACCES && err != EPERM)) {
      throw std::runtime_error("mkdir " + where + ": " + std::strerror(err));
    }
    const ProgramResult r = run(AsRoot(context, {"mkdir", FdPath(self, parent_fd) + "/" + name}));
    if (r.exit_code != 0) {
      throw std::runtime_error("mkdir " + where +
                               " (through sudo): " + (r.err.empty() ? r.out : r.err));
    }
  };
  std::vector<std::string> done;
  for (const MountEntry& m : mounts) {
    if (auto mounted = MountedAt(read_mountinfo(), m.path)) {
      try {
        CheckMountedPath(m.path, ::geteuid());  // the path walked first, as a new mount's
      } catch (const std::runtime_error& e) {
        throw std::runtime_error("mount " + Describe(m) + ": " + e.what());
      }
      const bool fuse = mounted->type.starts_with("fuse");
      if (fuse && mounted->type == "fuse." + m.type && mounted->fuse_owner &&
          *mounted->fuse_owner != 0 && *mounted->fuse_owner != context.uid) {
        throw std::runtime_error("mount " + Describe(m) + ": " + m.path + " is already a " +
                                 mounted->type + " mount of uid " +
                                 std::to_string(*mounted->fuse_owner) +
                                 ", another user; unmount it or mount on another path");
      }
      if (!IsWhatWasAsked(m, context, *mounted)) {
        throw std::runtime_error("mount " + Describe(m) + ": " + m.path +
                                 " is already mounted from " + mounted->source + " (" +
                                 mounted->type + "); unmount it or mount on another path");
      }
      done.push_back(m.path + ": already mounted");
      continue;
    }
    UniqueFd point;
    try {
      point = OpenMountPoint(m.path, ::geteuid(), make_dir);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("mount " + Describe(m) + ": " + e.what());
    }
    // A failure is told with the mount point's path where the command had its descriptor.
    auto run_or_throw = [&](const std::vector<std::string>& argv) {
      const ProgramResult r = run(argv);
      if (r.exit_code == 0) return;
      std::string line;
      for (const std::string& word : argv) {
        line += (line.empty() ? "" : " ") + (word.starts_with("/proc/") ? m.path : word);
      }
      std::string why = r.err.empty() ? r.out : r.err;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      throw std::runtime_error(
          "mount " + Describe(m) + ": `" + line + "` failed" +
          (r.exit_code > 0 ? " (exit " + std::to_string(r.exit_code) + ")" : "") +
          (why.empty() ? "" : ": " + why));
    };
    // FUSE runs as the user, who cannot reach the agent's descriptors through /proc/PID (the
    // agent is not dumpable): it inherits the descriptor and reaches it as its own.
    const bool as_user = !context.root && (m.type == "gcsfuse" || m.type == "sshfs");
    const std::string target =
        as_user ? "/proc/self/fd/" + std::to_string(point.get()) : FdPath(self, point.get());
    if (as_user) ::fcntl(point.get(), F_SETFD, 0);
    for (const std::vector<std::string>& argv : MountCommands(m, context, target)) {
      run_or_throw(argv);
    }
    if (m.type == "bind" && !m.options.empty()) {
      // The options, on the new mount's root: the path walked and checked again, and the
      // remount made only if it is the source that was just bound there.
      UniqueFd root = OpenMountPoint(m.path, ::geteuid(), make_dir);
      struct stat got {
      }, want{};
      if (::fstat(root.get(), &got) != 0 || ::stat(m.source.c_str(), &want) != 0 ||
          got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
        throw std::runtime_error("mount " + Describe(m) + ": " + m.path +
                                 " changed while it was mounted; the options were not applied");
      }
      run_or_throw(RemountCommand(m, context, FdPath(self, root.get())));
    }
    done.push_back("mounted " + Describe(m));
  }
  return done;
}

}  // namespace podrun::agent
