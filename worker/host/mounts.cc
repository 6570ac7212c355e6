// See mounts.h.
#include "worker/host/mounts.h"

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
      commands.push_back(AsRoot(c, {"exportfs", "-o", "rw,sync,no_subtree_check,no_root_squash",
                                    c.peer_addresses[i] + ":" + m.export_path}));
    }
    if (m.export_path != m.path) {
      commands.push_back(AsRoot(c, {"mount", "--bind", m.export_path, m.path}));
    }
  } else if (m.type == "nfs") {
    std::vector<std::string> argv = {"mount", "-t", "nfs"};
    AddOptions(m, &argv);
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

bool IsMountPoint(const std::string& mountinfo, const std::string& path) {
  // Each line: ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS ...
  size_t start = 0;
  while (start < mountinfo.size()) {
    size_t end = mountinfo.find('\n', start);
    if (end == std::string::npos) end = mountinfo.size();
    const std::string line = mountinfo.substr(start, end - start);
    start = end + 1;
    size_t field = 0, at = 0;
    for (; field < 4 && at != std::string::npos; ++field) {
      at = line.find(' ', at);
      if (at != std::string::npos) ++at;
    }
    if (at == std::string::npos) continue;
    const size_t stop = line.find(' ', at);
    if (Unescape(line.substr(at, stop == std::string::npos ? std::string::npos : stop - at)) ==
        path) {
      return true;
    }
  }
  return false;
}

std::vector<std::string> ApplyMounts(const std::vector<MountEntry>& mounts,
                                     const MountContext& context, const ProgramRunner& run,
                                     const std::function<std::string()>& read_mountinfo) {
  std::vector<std::string> done;
  for (const MountEntry& m : mounts) {
    if (IsMountPoint(read_mountinfo(), m.path)) {
      done.push_back(m.path + ": already mounted");
      continue;
    }
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
