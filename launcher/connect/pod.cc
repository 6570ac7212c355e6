// A pod resolved from its settings (see pod.h).
#include "launcher/connect/pod.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "launcher/base/error.h"
#include "launcher/output/say.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/pod/worker_range.h"
#include "launcher/ssh/ssh_reach.h"
#include "launcher/store/podrun_home.h"
#include "proto/home_path.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

// How long a cached TPU worker address may take to accept a TCP connection.
constexpr auto kCachedAddressProbeTimeout = std::chrono::milliseconds(1500);

std::string HomeDir() {
  const char* home = std::getenv("HOME");
  return home ? home : "/";
}

std::string ExpandTilde(const std::string& path) {
  return ExpandHome(path, HomeDir()).value_or(path);
}

}  // namespace

namespace {

// --tpu A[,B,...]: the workers of each node in order (A's first), each reached at its external
// IP unless --internal-ip (or it has none), each reaching the others at its internal IP. Returns
// whether any node's answer came from the cache.
bool DiscoverTpuWorkers(const PodSettings& s, bool refresh, Pod* pod) {
  if (!s.zone) throw UsageError("--tpu needs --zone ZONE (and --project P unless gcloud has one)");
  const std::vector<std::string> names = SplitTpuNames(*s.tpu);
  for (const std::string& name : names) {
    if (name.empty()) throw UsageError(fmt::format("--tpu {}: an empty node name", *s.tpu));
  }
  // A spec's names were checked as it was read; what is wrong here came from the command line.
  if (std::string problem = TpuOptionsProblem(s.tpu, s.zone, s.project); !problem.empty()) {
    throw UsageError(problem);
  }
  const std::filesystem::path cache = PodrunHome() / "cache";
  bool any_cached = false;
  for (size_t slice = 0; slice < names.size(); ++slice) {
    const TpuQuery query{names[slice], *s.zone, s.project};
    bool cached = false;
    const TpuNode node = DescribeTpuNode(query, cache, refresh, &cached);
    any_cached = any_cached || cached;
    // The project gcloud chose by default is pinned: a keeper or rerun later asks the same one,
    // whatever gcloud's default says then.
    TpuQuery pinned = query;
    if (!pinned.project && !node.project.empty() && ProjectIdProblem(node.project).empty()) {
      pinned.project = node.project;
    }
    pod->tpu_nodes.push_back(pinned);
    if (node.state != "READY") {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("tpu {} is {}, not READY: nothing was started", names[slice],
                              node.state.empty() ? "in no state" : node.state));
    }
    for (const TpuEndpoint& e : node.endpoints) {
      PodWorker w;
      w.index = static_cast<int>(pod->workers.size());
      const bool internal = s.internal_ip.value_or(false) || !e.external_ip;
      w.host = HostSpec{{}, internal ? e.internal_ip : *e.external_ip, {}};
      w.peer_address = e.internal_ip;
      w.slice = static_cast<int>(slice);
      pod->workers.push_back(std::move(w));
    }
  }
  pod->cloud_tpu = true;
  pod->internal_ip = s.internal_ip.value_or(false);
  pod->slices = static_cast<int>(names.size());
  pod->description = "tpu:" + *s.tpu;
  return any_cached;
}

// A cached answer is checked before it is used: a worker that does not accept a TCP
// connection at its cached address (TPU VMs' external IPs change on maintenance and when a
// node is recreated) makes podrun ask gcloud again at once.
void DiscoverTpuWorkersChecked(const PodSettings& s, Pod* pod) {
  if (!DiscoverTpuWorkers(s, s.refresh.value_or(false), pod)) return;
  // Probed where SSH goes (ssh_config, -p, -J: ssh_reach.h); through a jump host, not at all.
  SshOptions route;
  route.default_port = s.port;
  if (s.ssh_config) route.ssh_config = ExpandTilde(*s.ssh_config);
  if (s.jump) route.jump = ParseJumpChain(*s.jump);
  route.known_hosts = ExpandTilde(s.known_hosts.value_or("~/.ssh/known_hosts"));
  std::vector<HostSpec> hosts;
  for (const PodWorker& w : pod->workers) hosts.push_back(w.host);
  const std::vector<ProbeResult> probes = ProbeSshRoutes(hosts, route, kCachedAddressProbeTimeout);
  std::string silent;
  for (size_t i = 0; i < probes.size(); ++i) {
    if (probes[i] != ProbeResult::kUnreachable) continue;
    silent += fmt::format("{}w{} ({})", silent.empty() ? "" : ", ", i, hosts[i].host);
  }
  if (silent.empty()) return;
  Say(
      fmt::format("no answer at the cached address of {}: asking "
                  "gcloud again",
                  silent));
  *pod = Pod();
  DiscoverTpuWorkers(s, /*refresh=*/true, pod);
}

}  // namespace

Pod ResolvePod(const PodSettings& s) {
  int choices = (s.hosts ? 1 : 0) + (s.tpu ? 1 : 0) + (s.local ? 1 : 0);
  if (choices == 0) {
    throw UsageError(
        "no pod selected: give --hosts H1,H2,..., --hosts @FILE, --tpu NAME "
        "--zone ZONE, or --local N");
  }
  if (choices > 1) throw UsageError("choose one of --hosts, --tpu and --local");
  Pod pod;
  if (s.tpu) {
    DiscoverTpuWorkersChecked(s, &pod);
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
  if (s.user) ValidateUser(*s.user, "--user " + *s.user);
  pod.ssh.default_user = s.user;
  pod.ssh.default_port = s.port;
  if (s.identity) {
    pod.ssh.identity = ExpandTilde(*s.identity);
    if (!std::filesystem::exists(*pod.ssh.identity)) {
      throw UsageError(fmt::format("identity file {} does not exist", *pod.ssh.identity));
    }
  }
  if (s.ssh_config) {
    pod.ssh.ssh_config = ExpandTilde(*s.ssh_config);
    if (!std::filesystem::exists(*pod.ssh.ssh_config)) {
      throw UsageError(fmt::format("ssh_config {} does not exist", *pod.ssh.ssh_config));
    }
  }
  if (s.jump) pod.ssh.jump = ParseJumpChain(*s.jump);
  pod.ssh.known_hosts = ExpandTilde(s.known_hosts.value_or("~/.ssh/known_hosts"));
  pod.ssh.strict_host_keys = s.strict_host_keys.value_or(false);
  pod.ssh.connect_timeout = std::chrono::seconds(s.connect_timeout.value_or(10));
  pod.fanout = s.fanout.value_or(64);
  // A tuning knob, not a contract option: how often to probe a quiet connection (a connection
  // silent for 3 intervals is declared lost).
  if (const char* keepalive = std::getenv("PODRUN_SSH_KEEPALIVE_SECONDS")) {
    if (int seconds = std::atoi(keepalive); seconds > 0) {
      pod.ssh.keepalive_interval = std::chrono::seconds(seconds);
    }
  }
  return pod;
}

}  // namespace podrun
