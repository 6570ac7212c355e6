// See mounts.h.
#include "worker/host/mounts.h"

#include <sys/stat.h>
#include <unistd.h>

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

// Whether what is mounted on the path is the entry's filesystem. A bind mount (or the NFS
// server's own bind of its export) shows only the device, so any mount passes for it.
bool IsWhatWasAsked(const MountEntry& m, const MountContext& c, const MountedFilesystem& seen) {
  if (m.type == "nfs" && m.server_worker != c.worker_id) {
    return seen.type.starts_with("nfs") && seen.source == m.server + ":" + m.export_path;
  }
  if (m.type == "gcsfuse") return seen.type == "fuse.gcsfuse" || seen.source == m.bucket;
  if (m.type == "sshfs") return seen.type == "fuse.sshfs" && seen.source == m.source;
  return true;
}

}  // namespace

std::vector<std::vector<std::string>> MountCommands(const MountEntry& m, const MountContext& c) {
  std::vector<std::vector<std::string>> commands;
  commands.push_back(AsRoot(c, {"mkdir", "-p", m.path}));
  if (m.type == "bind") {
    std::vector<std::string> argv = {"mount", "--bind"};
    AddOptions(m, &argv);
    argv.push_back(m.source);
    argv.push_back(m.path);
    commands.push_back(AsRoot(c, argv));
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
      commands.push_back(AsRoot(c, {"mount", "--bind", m.export_path, m.path}));
    }
  } else if (m.type == "nfs") {
    // nosuid,nodev first: a share's setuid file or device node gives nothing on this worker,
    // unless the spec's own options (later, so they win) ask for suid or dev.
    std::vector<std::string> argv = {"mount", "-t", "nfs", "-o",
                                     "nosuid,nodev" + (m.options.empty() ? "" : "," + m.options)};
    argv.push_back(m.server + ":" + m.export_path);
    argv.push_back(m.path);
    commands.push_back(AsRoot(c, argv));
  } else if (m.type == "gcsfuse") {
    std::vector<std::string> argv = {"gcsfuse", "--implicit-dirs"};
    AddOptions(m, &argv);
    argv.push_back(m.bucket);
    argv.push_back(m.path);
    commands.push_back(argv);
  } else if (m.type == "sshfs") {
    std::vector<std::string> argv = {"sshfs"};
    AddOptions(m, &argv);
    argv.push_back(m.source);
    argv.push_back(m.path);
    commands.push_back(argv);
  } else {
    throw std::runtime_error("unknown mount type '" + m.type + "'");
  }
  return commands;
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

void CheckMountPoint(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // made by the first command
  if (S_ISLNK(st.st_mode)) {
    throw std::runtime_error("mount point " + path +
                             " is a symlink; give the real path (nothing is mounted through it)");
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    throw std::runtime_error("mount point " + path + " is owned by uid " +
                             std::to_string(st.st_uid) +
                             ", another user; mount on a path of root's or your own");
  }
}

std::vector<std::string> ApplyMounts(const std::vector<MountEntry>& mounts,
                                     const MountContext& context, const ProgramRunner& run,
                                     const std::function<std::string()>& read_mountinfo) {
  std::vector<std::string> done;
  for (const MountEntry& m : mounts) {
    if (auto mounted = MountedAt(read_mountinfo(), m.path)) {
      if (!IsWhatWasAsked(m, context, *mounted)) {
        throw std::runtime_error("mount " + Describe(m) + ": " + m.path +
                                 " is already mounted from " + mounted->source + " (" +
                                 mounted->type + "); unmount it or mount on another path");
      }
      done.push_back(m.path + ": already mounted");
      continue;
    }
    CheckMountPoint(m.path);
    for (const std::vector<std::string>& argv : MountCommands(m, context)) {
      const ProgramResult r = run(argv);
      if (r.exit_code == 0) continue;
      std::string line;
      for (const std::string& word : argv) line += (line.empty() ? "" : " ") + word;
      std::string why = r.err.empty() ? r.out : r.err;
      while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
      throw std::runtime_error(
          "mount " + Describe(m) + ": `" + line + "` failed" +
          (r.exit_code > 0 ? " (exit " + std::to_string(r.exit_code) + ")" : "") +
          (why.empty() ? "" : ": " + why));
    }
    done.push_back("mounted " + Describe(m));
  }
  return done;
}

}  // namespace podrun::agent
