// A pod resolved from its settings (see pod.h).
#include "launcher/connect/pod.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "launcher/base/error.h"
#include "launcher/connect/source_discovery.h"
#include "launcher/persist/holder_client.h"
#include "launcher/pod/worker_range.h"
#include "launcher/store/podrun_home.h"
#include "proto/home_path.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

std::string HomeDir() {
  const char* home = std::getenv("HOME");
  return home ? home : "/";
}

std::string ExpandTilde(const std::string& path) {
  return ExpandHome(path, HomeDir()).value_or(path);
}

// The SSH settings (and fan-out) of the pod, from `s`.
void FillSshSettings(const PodSettings& s, Pod* pod) {
  if (s.user) ValidateUser(*s.user, "--user " + *s.user);
  pod->ssh.default_user = s.user;
  pod->ssh.default_port = s.port;
  if (s.identity) {
    pod->ssh.identity = ExpandTilde(*s.identity);
    if (!std::filesystem::exists(*pod->ssh.identity)) {
      throw UsageError(fmt::format("identity file {} does not exist", *pod->ssh.identity));
    }
  }
  if (s.ssh_config) {
    pod->ssh.ssh_config = ExpandTilde(*s.ssh_config);
    if (!std::filesystem::exists(*pod->ssh.ssh_config)) {
      throw UsageError(fmt::format("ssh_config {} does not exist", *pod->ssh.ssh_config));
    }
  }
  if (s.jump) pod->ssh.jump = ParseJumpChain(*s.jump);
  pod->ssh.known_hosts = ExpandTilde(s.known_hosts.value_or("~/.ssh/known_hosts"));
  pod->ssh.strict_host_keys = s.strict_host_keys.value_or(false);
  pod->ssh.connect_timeout = std::chrono::seconds(s.connect_timeout.value_or(10));
  pod->fanout = s.fanout.value_or(64);
  // A tuning knob, not a contract option: how often to probe a quiet connection (a connection
  // silent for 3 intervals is declared lost).
  if (const char* keepalive = std::getenv("PODRUN_SSH_KEEPALIVE_SECONDS")) {
    if (int seconds = std::atoi(keepalive); seconds > 0) {
      pod->ssh.keepalive_interval = std::chrono::seconds(seconds);
    }
  }
}

}  // namespace

std::string SshAddressOf(const SourceWorker& vm, bool internal_ip) {
  return internal_ip || !vm.external_ip ? vm.internal_ip : *vm.external_ip;
}

Pod ResolvePod(const PodSettings& s, const SliceDescribed& described) {
  int choices = (s.hosts ? 1 : 0) + (s.tpu ? 1 : 0) + (s.mig ? 1 : 0) + (s.local ? 1 : 0);
  if (choices == 0) {
    throw UsageError(
        "no pod selected: give --hosts H1,H2,..., --hosts @FILE, --tpu NAME "
        "--zone ZONE, --mig NAME --zone ZONE, or --local N");
  }
  if (choices > 1) throw UsageError("choose one of --hosts, --tpu, --mig and --local");
  Pod pod;
  FillSshSettings(s, &pod);
  if (s.tpu || s.mig) {
    // After the SSH settings: a MIG's VMs may be asked their numbers.
    DiscoverCloudPod(s, &pod, described);
  } else if (s.local) {
    pod.local = *s.local;
    for (int i = 0; i < pod.local; ++i) {
      PodWorker w;
      w.index = i;
      w.host = HostSpec{{}, "localhost", {}};
      pod.workers.push_back(std::move(w));
    }
    pod.description = fmt::format("local:{}", pod.local);
  } else {
    std::vector<HostSpec> hosts;
    for (const std::string& entry : *s.hosts) {
      for (HostSpec& h : ParseHostList(entry)) hosts.push_back(std::move(h));
    }
    for (size_t i = 0; i < hosts.size(); ++i) {
      PodWorker w;
      w.index = static_cast<int>(i);
      w.host = hosts[i];
      pod.workers.push_back(std::move(w));
    }
    pod.description = fmt::format("hosts:{}", hosts.size());
  }
  int n = static_cast<int>(pod.workers.size());
  if (s.workers) {
    pod.selected = ParseWorkerRange(*s.workers, n);
  } else {
    for (int i = 0; i < n; ++i) pod.selected.push_back(i);
  }
  pod.persist = pod.local == 0 && PersistWanted(s.no_persist);
  return pod;
}

std::vector<PodSourceRef> PodSourcesOf(const Pod& pod) {
  if (!pod.cloud_tpu) return {};
  return pod.sources;
}

}  // namespace podrun
