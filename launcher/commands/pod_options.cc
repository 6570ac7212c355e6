// POD OPTIONS on the command line, and their merging with a spec's pod section.
#include "launcher/commands/pod_options.h"

#include "launcher/pod/tpu_names.h"
#include "launcher/spec/pod_create.h"

namespace podrun {

void AddPodOptions(CLI::App& app, PodSettings& pod) {
  app.add_option_function<std::string>(
         "--hosts",
         [&pod](const std::string& value) { pod.hosts = std::vector<std::string>{value}; },
         "Workers in rank order: H1,H2,... each [user@]host[:port], or @FILE (one per line)")
      ->group("Pod");
  app.add_option_function<std::string>(
         "--tpu", [&pod](const std::string& v) { pod.tpu = v; },
         "Discover the workers of this Cloud TPU VM pod")
      ->group("Pod");
  app.add_option_function<std::string>(
         "--mig", [&pod](const std::string& v) { pod.mig = v; },
         "Discover the workers of this TPU slice made in Compute Engine (a managed instance "
         "group of TPU VMs: v5p, v6e, TPU7x); A,B: a multislice job")
      ->group("Pod");
  app.add_option_function<std::string>(
         "--zone", [&pod](const std::string& v) { pod.zone = v; }, "Zone of --tpu or --mig")
      ->group("Pod");
  app.add_option_function<std::string>(
         "--project", [&pod](const std::string& v) { pod.project = v; },
         "Project of --tpu or --mig")
      ->group("Pod");
  app.add_flag_function(
         "--internal-ip", [&pod](std::int64_t) { pod.internal_ip = true; },
         "With --tpu or --mig: connect to the workers' internal addresses")
      ->group("Pod");
  app.add_flag_function(
         "--refresh", [&pod](std::int64_t) { pod.refresh = true; },
         "With --tpu or --mig: ask gcloud again instead of using the cached answer")
      ->group("Pod");
  app.add_option_function<int>(
         "--local", [&pod](int n) { pod.local = n; },
         "N workers on this machine, no SSH (each with its own home)")
      ->group("Pod")
      ->check(CLI::PositiveNumber);
  app.add_option_function<std::string>(
         "-w,--workers", [&pod](const std::string& v) { pod.workers = v; },
         "Only these worker indexes, e.g. 0,2-3 (indexes keep their pod-wide meaning)")
      ->group("Pod");
  app.add_option_function<std::string>(
         "-l,--user", [&pod](const std::string& v) { pod.user = v; },
         "User for hosts that don't name one")
      ->group("SSH");
  app.add_option_function<int>(
         "-p,--port", [&pod](int v) { pod.port = v; }, "Port for hosts that don't name one")
      ->group("SSH")
      ->check(CLI::Range(1, 65535));
  app.add_option_function<std::string>(
         "-i,--identity", [&pod](const std::string& v) { pod.identity = v; },
         "Private key (default: ssh-agent, then the default key files)")
      ->group("SSH");
  app.add_option_function<std::string>(
         "-F,--ssh-config", [&pod](const std::string& v) { pod.ssh_config = v; },
         "ssh_config to read (default ~/.ssh/config)")
      ->group("SSH");
  app.add_option_function<std::string>(
         "-J,--jump", [&pod](const std::string& v) { pod.jump = v; },
         "Reach the workers through this jump host, [user@]host[:port][,...] as ssh -J "
         "(one connection to it carries every worker's)")
      ->group("SSH");
  app.add_option_function<std::string>(
         "--known-hosts", [&pod](const std::string& v) { pod.known_hosts = v; },
         "known_hosts file (default ~/.ssh/known_hosts)")
      ->group("SSH");
  app.add_flag_function(
         "--strict-host-keys", [&pod](std::int64_t) { pod.strict_host_keys = true; },
         "Refuse hosts whose key is not known yet (default: record new keys)")
      ->group("SSH");
  app.add_option_function<int>(
         "--fanout", [&pod](int v) { pod.fanout = v; },
         "At most N SSH connections being set up at once (default 64)")
      ->group("SSH")
      ->check(CLI::PositiveNumber);
  app.add_option_function<int>(
         "--connect-timeout", [&pod](int v) { pod.connect_timeout = v; },
         "Seconds per worker to connect and authenticate (default 10)")
      ->group("SSH")
      ->check(CLI::PositiveNumber);
  app.add_flag_function(
         "--no-persist", [&pod](std::int64_t) { pod.no_persist = true; },
         "Open fresh connections and keep none (also PODRUN_PERSIST=0); else exec's\n"
         "connections are kept by a per-user holder for PODRUN_PERSIST_SECONDS (600)\n"
         "after their last use, so the next command skips the handshakes")
      ->group("SSH");
}

PodSettings MergePodSettings(const PodSettings& cli, const PodSettings& spec) {
  PodSettings out = spec;
  // A pod chosen on the command line replaces the spec's choice of pod as a whole.
  if (cli.hosts || cli.tpu || cli.mig || cli.local) {
    out.hosts = cli.hosts;
    out.tpu = cli.tpu;
    out.mig = cli.mig;
    out.local = cli.local;
    out.zone = cli.zone;
    out.project = cli.project;
  }
  auto pick = [](auto& into, const auto& from) {
    if (from) into = from;
  };
  pick(out.zone, cli.zone);
  pick(out.project, cli.project);
  pick(out.internal_ip, cli.internal_ip);
  pick(out.refresh, cli.refresh);
  pick(out.workers, cli.workers);
  pick(out.user, cli.user);
  pick(out.port, cli.port);
  pick(out.identity, cli.identity);
  pick(out.ssh_config, cli.ssh_config);
  pick(out.known_hosts, cli.known_hosts);
  pick(out.jump, cli.jump);
  pick(out.strict_host_keys, cli.strict_host_keys);
  pick(out.fanout, cli.fanout);
  pick(out.connect_timeout, cli.connect_timeout);
  out.no_persist = cli.no_persist;
  // The spec's create: is for the spec's own slices: kept only when every one chosen now is one.
  if (out.create) {
    const PodSourceKind kind = out.mig ? PodSourceKind::kMig : PodSourceKind::kTpuNode;
    const std::optional<std::string>& list = out.mig ? out.mig : out.tpu;
    bool covered = list && out.zone;
    for (const std::string& name : covered ? SplitTpuNames(*list) : std::vector<std::string>{}) {
      covered = covered && SpecCreateCovers(spec, SliceRef{name, *out.zone, out.project}, kind);
    }
    if (!covered) out.create.reset();
  }
  return out;
}

}  // namespace podrun
