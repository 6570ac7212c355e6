// Discovering a pod through its sources (see source_discovery.h).
#include "launcher/connect/source_discovery.h"

#include <fmt/format.h>

#include <map>

#include "launcher/base/error.h"
#include "launcher/connect/worker_numbers.h"
#include "launcher/output/say.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tcp_probe.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/ssh/ssh_reach.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

// How long a cached worker address may take to accept a TCP connection.
constexpr auto kCachedAddressProbeTimeout = std::chrono::milliseconds(1500);

struct Slice {
  std::unique_ptr<PodSource> source;
  SourceState state;
  size_t first = 0;  // the pod index of its first worker
};

void ClearDiscovered(Pod* pod) {
  pod->workers.clear();
  pod->sources.clear();
}

// Describes every slice and fills the pod from the answers; returns whether any came from the
// cache.
bool Describe(const PodSettings& s, bool refresh, Pod* pod, std::vector<Slice>* slices) {
  const PodSourceKind kind = s.mig ? PodSourceKind::kMig : PodSourceKind::kTpuNode;
  const std::string option = std::string("--") + PodSourceKindName(kind);
  const std::string& list = s.mig ? *s.mig : *s.tpu;
  if (!s.zone) {
    throw UsageError(option + " needs --zone ZONE (and --project P unless gcloud has one)");
  }
  const std::vector<std::string> names = SplitTpuNames(list);
  for (const std::string& name : names) {
    if (name.empty()) throw UsageError(fmt::format("{} {}: an empty name", option, list));
    // A spec's names were checked as it was read; what is wrong here came from the command line.
    if (std::string problem = TpuNodeNameProblem(name); !problem.empty()) {
      throw UsageError(fmt::format("{} '{}': {}", option, name, problem));
    }
  }
  if (std::string problem = TpuOptionsProblem(std::nullopt, s.zone, s.project); !problem.empty()) {
    throw UsageError(problem);
  }
  const std::filesystem::path cache = PodrunHome() / "cache";
  bool any_cached = false;
  for (size_t i = 0; i < names.size(); ++i) {
    const SliceRef query{names[i], *s.zone, s.project};
    Slice slice;
    slice.source = MakePodSource(PodSourceRef{kind, query}, cache);
    bool cached = false;
    slice.state = slice.source->Describe(refresh, &cached);
    any_cached = any_cached || cached;
    // The project gcloud chose by default is pinned: a keeper or rerun later asks the same one,
    // whatever gcloud's default says then.
    SliceRef pinned = query;
    if (!pinned.project && !slice.state.project.empty() &&
        ProjectIdProblem(slice.state.project).empty()) {
      pinned.project = slice.state.project;
    }
    pod->sources.push_back({kind, pinned});
    if (!slice.state.not_ready.empty()) {
      throw Error(ExitCode::kUnreachable, slice.state.not_ready + ": nothing was started");
    }
    slice.first = pod->workers.size();
    for (const SourceWorker& e : slice.state.workers) {
      PodWorker w;
      w.index = static_cast<int>(pod->workers.size());
      w.host = HostSpec{{}, SshAddressOf(e, s.internal_ip.value_or(false)), {}};
      w.peer_address = e.internal_ip;
      w.slice = static_cast<int>(i);
      pod->workers.push_back(std::move(w));
    }
    slices->push_back(std::move(slice));
  }
  pod->cloud_tpu = true;
  pod->internal_ip = s.internal_ip.value_or(false);
  pod->slices = static_cast<int>(names.size());
  pod->description = std::string(PodSourceKindName(kind)) + ":" + list;
  return any_cached;
}

// The workers of slices whose API does not show the TPU worker numbers, put in that order by
// asking their VMs; the numbers are remembered in the cached answer.
void OrderByVmNumbers(Pod* pod, std::vector<Slice>& slices) {
  std::vector<int> indexes;
  for (const Slice& slice : slices) {
    for (size_t k = 0; k < slice.state.workers.size(); ++k) {
      if (!slice.state.workers[k].tpu_worker_number) {
        indexes.push_back(static_cast<int>(slice.first + k));
      }
    }
  }
  if (indexes.empty()) return;
  const std::vector<int> numbers = AskTpuWorkerNumbers(*pod, indexes);
  std::map<size_t, int> number_of;  // pod index -> the VM's TPU worker number
  for (size_t i = 0; i < indexes.size(); ++i) {
    number_of[static_cast<size_t>(indexes[i])] = numbers[i];
  }
  for (Slice& slice : slices) {
    const size_t n = slice.state.workers.size();
    std::vector<PodWorker> ordered(n);
    std::vector<bool> taken(n, false);
    std::map<std::string, int> remembered;
    std::string wrong;
    for (size_t k = 0; k < n; ++k) {
      const SourceWorker& vm = slice.state.workers[k];
      const auto asked = number_of.find(slice.first + k);
      const int number = vm.tpu_worker_number       ? *vm.tpu_worker_number
                         : asked != number_of.end() ? asked->second
                                                    : -1;
      if (number < 0 || static_cast<size_t>(number) >= n || taken[static_cast<size_t>(number)]) {
        wrong += fmt::format("{}{} ({}) says it is TPU worker {}", wrong.empty() ? "" : "; ",
                             vm.name, vm.internal_ip, number);
        continue;
      }
      taken[static_cast<size_t>(number)] = true;
      ordered[static_cast<size_t>(number)] = pod->workers[slice.first + k];
      remembered[vm.name] = number;
    }
    if (!wrong.empty()) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: the VMs' TPU worker numbers are not 0..{} once each: {}",
                              slice.source->What(), n - 1, wrong));
    }
    for (size_t k = 0; k < n; ++k) {
      ordered[k].index = static_cast<int>(slice.first + k);
      pod->workers[slice.first + k] = ordered[k];
    }
    slice.source->RememberWorkerNumbers(remembered);
  }
}

}  // namespace

void DiscoverCloudPod(const PodSettings& s, Pod* pod, const SliceDescribed& described) {
  std::vector<Slice> slices;
  if (Describe(s, s.refresh.value_or(false), pod, &slices)) {
    // A cached answer is checked before it is used: a worker that does not accept a TCP
    // connection at its cached address (external IPs change on maintenance and when a slice is
    // made again) makes podrun ask gcloud again at once.
    // Probed where SSH goes (ssh_config, -p, -J: ssh_reach.h); through a jump host, not at all.
    std::vector<HostSpec> hosts;
    for (const PodWorker& w : pod->workers) hosts.push_back(w.host);
    const std::vector<ProbeResult> probes =
        ProbeSshRoutes(hosts, pod->ssh, kCachedAddressProbeTimeout);
    std::string silent;
    for (size_t i = 0; i < probes.size(); ++i) {
      if (probes[i] != ProbeResult::kUnreachable) continue;
      silent += fmt::format("{}w{} ({})", silent.empty() ? "" : ", ", i, hosts[i].host);
    }
    if (!silent.empty()) {
      Say(fmt::format("no answer at the cached address of {}: asking gcloud again", silent));
      ClearDiscovered(pod);
      slices.clear();
      Describe(s, /*refresh=*/true, pod, &slices);
    }
  }
  // Before any VM is connected to (its published host keys pinned by the caller, to each VM's
  // own address), then the VMs may be asked their numbers.
  if (described) {
    const std::vector<PodSourceRef> refs = PodSourcesOf(*pod);
    for (size_t i = 0; i < slices.size(); ++i) {
      described(*pod, refs[i], *slices[i].source, slices[i].state);
    }
  }
  OrderByVmNumbers(pod, slices);
}

}  // namespace podrun
