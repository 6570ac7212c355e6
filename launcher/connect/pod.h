// A pod as the commands hold it: its workers, SSH settings and TPU nodes, resolved from the POD
// OPTIONS (docs/reference.md, "Selecting the pod").
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/host_list.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/pod_worker.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/spec/spec.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

struct Pod {
  std::vector<PodWorker> workers;  // the whole pod, rank order
  std::vector<int> selected;       // indexes chosen with -w (all when not given)
  int local = 0;                   // > 0: --local N, no SSH
  SshOptions ssh;
  int fanout = 64;
  std::string description;   // "hosts:8", "local:4", "tpu:node-1", "mig:slice-1"
  bool cloud_tpu = false;    // discovered (--tpu, --mig): the TPU runtime sets TPU_WORKER_* itself
  int slices = 1;            // --tpu A,B / --mig A,B: the number of slices (multislice when > 1)
  bool internal_ip = false;  // --tpu/--mig with --internal-ip: workers reached at internal IPs
  // --tpu/--mig: each slice's source (its kind, name, zone, project), in slice order, to ask
  // again when a worker is lost (a preemption); kept in the job record (a rerun or a keeper asks
  // the API about the same slices, in the zone each lives in now).
  std::vector<PodSourceRef> sources;
  // Connections may be kept warm by the connection holder (persist/holder_client.h): not with
  // --no-persist or PODRUN_PERSIST=0, never for --local.
  bool persist = false;
};

// The pod's slices as pod sources, in slice order (its TPU nodes or its MIGs); none for a pod
// that was not discovered. Recovery drives them without asking which kind they are.
std::vector<PodSourceRef> PodSourcesOf(const Pod& pod);

// The address podrun connects to a discovered VM at: its internal IP with --internal-ip (or when
// it has no external one), else its external IP.
std::string SshAddressOf(const SourceWorker& vm, bool internal_ip);

// Called by discovery for each slice it described, before anything connects to the slice's VMs
// (a MIG whose API does not show the TPU worker numbers asks its VMs over SSH after this): the
// pod so far (its SSH settings and internal_ip set), which slice, its source and its answer. The
// host keys a slice podrun just made publishes are pinned here, each VM's to its own address.
using SliceDescribed = std::function<void(const Pod& pod, const PodSourceRef& slice,
                                          PodSource& source, const SourceState& state)>;

// Resolves the pod: reads a host file or discovers a TPU node's or MIG slice's workers through
// its pod source (pod/pod_source.h; `described` called for each slice described; a MIG's workers
// then put in TPU worker order by their VMs' metadata when the API does not show it:
// worker_numbers.h), checks -w against the pod size, fills SSH defaults (known_hosts
// ~/.ssh/known_hosts). Throws Error(kUsage) for missing or contradictory options,
// Error(kUnreachable) when discovery fails, and what `described` throws.
Pod ResolvePod(const PodSettings& settings, const SliceDescribed& described = {});

}  // namespace podrun
