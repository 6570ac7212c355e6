// Forgetting and pinning the host keys of created VMs (see host_keys.h).
#include "launcher/recovery/host_keys.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/output/say.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/ssh/known_hosts_editor.h"
#include "proto/run_program.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

bool IsSymlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// True when known_hosts already names hosts hashed (`|1|salt|hash`), as HashKnownHosts writes.
bool HoldsHashedNames(const std::string& text) {
  return text.starts_with("|1|") || text.find("\n|1|") != std::string::npos;
}

// `lines` with their host names hashed by `ssh-keygen -H`, through a scratch file beside
// `known_hosts` (never the file itself: -H would hash every name in it).
std::string Hashed(const std::string& known_hosts, const std::string& lines) {
  const std::string scratch = known_hosts + ".podrun-pin";
  std::filesystem::remove(scratch);
  std::filesystem::remove(scratch + ".old");
  {
    const int fd =
        ::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("cannot write {}: {}", scratch, std::strerror(errno)));
    }
    const bool written = WriteAll(fd, lines);
    ::close(fd);
    if (!written) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("cannot write {}: {}", scratch, std::strerror(errno)));
    }
  }
  ProgramResult r = RunProgram({"ssh-keygen", "-H", "-f", scratch});
  std::string out = ReadWhole(scratch);
  std::filesystem::remove(scratch);
  std::filesystem::remove(scratch + ".old");
  if (r.exit_code != 0) {
    throw Error(
        ExitCode::kUnreachable,
        fmt::format("cannot hash host names for {} (ssh-keygen -H): {}", known_hosts, r.err));
  }
  return out;
}

// Appends `text` to known_hosts, never through a symbolic link; a new file is 0600.
void Append(const std::string& known_hosts, std::string text) {
  const std::filesystem::path dir = std::filesystem::path(known_hosts).parent_path();
  std::error_code ignored;
  if (!dir.empty() && !std::filesystem::exists(dir, ignored)) {
    std::filesystem::create_directories(dir, ignored);
    ::chmod(dir.c_str(), 0700);
  }
  const int fd =
      ::open(known_hosts.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int e = errno;
    throw Error(ExitCode::kUnreachable,
                e == ELOOP ? fmt::format("known_hosts {} is a symbolic link: podrun writes host "
                                         "keys only to the file itself (name it in known_hosts:)",
                                         known_hosts)
                           : fmt::format("cannot write the host keys to {}: {}", known_hosts,
                                         std::strerror(e)));
  }
  struct stat st {};
  char last = '\n';
  if (::fstat(fd, &st) == 0 && st.st_size > 0 && ::pread(fd, &last, 1, st.st_size - 1) != 1) {
    last = '\n';
  }
  if (last != '\n') text = "\n" + text;
  const bool written = WriteAll(fd, text);
  const int e = errno;
  ::close(fd);
  if (!written) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("cannot write the host keys to {}: {}", known_hosts, std::strerror(e)));
  }
}

}  // namespace

std::string KnownHostsName(const HostKeyAddress& a) {
  return a.port == 22 ? a.host : fmt::format("[{}]:{}", a.host, a.port);
}

void ForgetHostKeys(const std::string& known_hosts, const std::vector<std::string>& hosts,
                    int port) {
  if (known_hosts.empty() || access(known_hosts.c_str(), F_OK) != 0) return;
  if (IsSymlink(known_hosts)) {
    Say(
        fmt::format("warning: {} is a symbolic link: podrun does not rewrite it (the old host "
                    "keys of the new VMs stay in it)",
                    known_hosts));
    return;
  }
  std::vector<std::string> names;
  for (const std::string& host : hosts) names.push_back(KnownHostsName({host, port}));
  try {
    RemoveKnownHosts(known_hosts, names);  // one pass, whatever the number of workers
  } catch (const Error& e) {
    Say(fmt::format("warning: could not forget the old host keys of the new VMs: {}", e.what()));
  }
}

std::vector<HostKeyAddress> HostKeyAddressesOf(const Pod& pod) {
  std::vector<HostKeyAddress> out;
  for (const PodWorker& w : pod.workers) {
    out.push_back({w.host.host, w.host.port.value_or(pod.ssh.default_port.value_or(22))});
  }
  return out;
}

std::vector<HostKeyAddress> NodeHostKeyAddresses(const Pod& pod, const std::string& node_name) {
  const std::vector<HostKeyAddress> all = HostKeyAddressesOf(pod);
  if (pod.tpu_nodes.empty()) return all;
  std::vector<HostKeyAddress> out;
  for (size_t i = 0; i < pod.workers.size(); ++i) {
    const int slice = pod.workers[i].slice;
    if (slice >= 0 && slice < static_cast<int>(pod.tpu_nodes.size()) &&
        pod.tpu_nodes[slice].name == node_name) {
      out.push_back(all[i]);
    }
  }
  return out;
}

PinnedHostKeys PinHostKeys(const std::string& known_hosts,
                           const std::vector<HostKeyAddress>& workers,
                           const TpuHostKeys& published) {
  PinnedHostKeys done;
  if (known_hosts.empty()) return done;
  if (IsSymlink(known_hosts)) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("known_hosts {} is a symbolic link: podrun writes host keys only to "
                            "the file itself (name it in known_hosts:)",
                            known_hosts));
  }
  std::vector<std::string> names;
  for (const HostKeyAddress& w : workers) names.push_back(KnownHostsName(w));
  try {
    RemoveKnownHosts(known_hosts, names);
  } catch (const Error& e) {
    throw Error(ExitCode::kUnreachable, e.what());
  }
  std::string lines;
  for (size_t i = 0; i < workers.size(); ++i) {
    auto keys = published.find(static_cast<int>(i));
    if (keys == published.end() || keys->second.empty()) {
      done.first_use.push_back(static_cast<int>(i));
      continue;
    }
    for (const PublishedHostKey& key : keys->second) {
      lines += fmt::format("{} {} {}\n", KnownHostsName(workers[i]), key.type, key.base64);
    }
    done.pinned.push_back(static_cast<int>(i));
  }
  for (int w : done.first_use) {
    Say(fmt::format("w{} ({}): the TPU API published no host key: recorded on first contact", w,
                    workers[w].host));
  }
  if (lines.empty()) return done;
  const bool hashed =
      access(known_hosts.c_str(), F_OK) == 0 && HoldsHashedNames(ReadWhole(known_hosts));
  Append(known_hosts, hashed ? Hashed(known_hosts, lines) : lines);
  return done;
}

PinnedHostKeys PinNodeHostKeys(const TpuQuery& node, const std::string& known_hosts,
                               const std::vector<HostKeyAddress>& workers) {
  TpuHostKeys published;
  const std::string what = DescribeTpuQuery(node);
  try {
    published = ParseTpuHostKeys(RunGcloud(GcloudGuestAttributesCommand(node), what), what);
  } catch (const Error& e) {
    Say(
        fmt::format("could not read the host keys {} publishes ({}): the new VMs' keys are "
                    "recorded on first contact",
                    node.name, e.what()));
    PinnedHostKeys done;
    for (size_t i = 0; i < workers.size(); ++i) {
      ForgetHostKeys(known_hosts, {workers[i].host}, workers[i].port);
      done.first_use.push_back(static_cast<int>(i));
    }
    return done;
  }
  PinnedHostKeys done = PinHostKeys(known_hosts, workers, published);
  if (!done.pinned.empty()) {
    Say(fmt::format("{}: pinned the host keys its {} of {} workers publish through the TPU API",
                    what, done.pinned.size(), workers.size()));
  }
  return done;
}

}  // namespace podrun
