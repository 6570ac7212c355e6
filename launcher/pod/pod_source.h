// PodSource: where a discovered pod's workers come from, behind one interface
// (docs/architecture.md, "Pod sources"): a Cloud TPU node (tpu_node_source.cc) or a Compute Engine
// managed instance group of TPU VMs (mig_source.cc). Discovery asks a source what it holds;
// provisioning and recovery will drive it the same way, never asking which kind it is. A new source
// (a GKE node pool, another cloud) is one new file implementing this class and one line in
// MakePodSource.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/pod/tpu_host_keys.h"

namespace podrun {

// One VM of a source, as the API describes it.
struct SourceWorker {
  std::string name;                        // the VM's name (a MIG instance); "" for a TPU node's
  std::string internal_ip;                 // how the other workers reach it
  std::optional<std::string> external_ip;  // how the launcher reaches it unless --internal-ip
  std::string state;                       // the VM's own state (RUNNING, STOPPING, ...); may be ""
  // Its TPU worker number when the API shows it (a TPU node: the endpoint's index; a MIG
  // instance: its `agent-worker-number` metadata); else the VM's metadata server says it.
  std::optional<int> tpu_worker_number;
};

// What a source holds now.
struct SourceState {
  std::string project;  // the project the API answered for ("" when not shown)
  // "" when the workers can run a job; else why not, naming the VM and its state, e.g.
  // "tpu node-1 is CREATING, not READY" or "mig slice-1: instance slice-1-x2ab is STOPPING, not
  // RUNNING".
  std::string not_ready;
  std::string state;  // the source's own word for its state (READY, PREEMPTED, RUNNING, ...)
  // In TPU worker order when every worker's number is known (sorted by it); else in the API's
  // order, to be put in order from the VMs' own metadata (connect/worker_numbers.h).
  std::vector<SourceWorker> workers;
};

// The kind of a source, as the job record and messages name it.
enum class PodSourceKind { kTpuNode, kMig };

// Which source: its kind and its name, zone and project.
struct PodSourceRef {
  PodSourceKind kind = PodSourceKind::kTpuNode;
  SliceRef query;
};

// What a source is now, for provisioning and recovery.
enum class SourceCondition {
  kReady,      // every VM can run a job
  kBusy,       // not yet, but it comes back by itself: CREATING, a group repairing its VMs
  kPreempted,  // only a recreation brings it back: a node PREEMPTED, a Spot VM stopped
  kGone,       // it does not exist (deleted, never made)
};

// A source as the API describes it now (asked afresh, never the cache).
struct SourceNow {
  PodSourceRef ref;
  SourceCondition condition = SourceCondition::kGone;
  // The API's word for it: "READY", "PREEMPTED", "deleted", "CREATING", "repairing (slice-1-x2ab
  // RECREATING)", "SUSPENDED" (a node's queued resource) ...
  std::string state;
  // Why it cannot run a job, naming the VM: "tpu node-1 is PREEMPTED", "mig slice-1: instance
  // slice-1-x2ab is TERMINATED (a Spot VM preempted)"; "" when ready.
  std::string why;
  // Capacity is short (a stockout the API reports while making the VMs): what it says.
  std::string stockout;
  // kBusy because it is being deleted (a TPU node DELETING, a group whose every VM is being
  // deleted): it reads kGone once that ends, and never comes back by itself.
  bool deleting = false;
  // kBusy because the API is making its VMs (a TPU node CREATING, its queued resource
  // PROVISIONING): a slice podrun created that stays so past the creating deadline is made again.
  bool creating = false;
  // The API gave up making it (a queued resource FAILED: it expired or could not be satisfied):
  // not a preemption of what ran, nothing to wait for.
  bool failed = false;

  bool ready() const { return condition == SourceCondition::kReady; }
  bool preempted() const { return condition == SourceCondition::kPreempted; }
  bool deleted() const { return condition == SourceCondition::kGone; }
};

class PodSource {
 public:
  virtual ~PodSource() = default;

  // "tpu node-1 (zone Z[, project P])" or "mig slice-1 (zone Z[, project P])", for messages.
  virtual std::string What() const = 0;
  // What the source holds: from the cache (younger than kSliceCacheTtl, and ready) unless
  // `refresh`, else from gcloud. Throws Error(kUnreachable) with gcloud's words when gcloud fails
  // (no such node or group, not logged in) or its answer cannot be read; Error(kInterrupted) on
  // Ctrl-C. `from_cache`, if given, is set to whether the answer came from the cache.
  virtual SourceState Describe(bool refresh, bool* from_cache) = 0;
  // Records the TPU worker numbers the VMs themselves gave (VM name -> number) in the cached
  // answer, so that the next command asks no VM again. Sources whose API shows them ignore it.
  virtual void RememberWorkerNumbers(const std::map<std::string, int>& numbers) = 0;
  // Drops the cached answer (the source was deleted or made again: its addresses change).
  virtual void ForgetCache() = 0;
  // What the source is now, from gcloud (the cache is dropped: a later Describe asks too). A
  // source that does not exist is kGone, not an error. Throws as Describe.
  virtual SourceNow Now() = 0;
  // Asks for the source to be made with `create` and returns once the API took it (the caller
  // waits with Now). Throws GcloudError with gcloud's words (a stockout: kStockout); whatever
  // this call made before a later step failed is deleted first.
  virtual void Create(const TpuCreate& create) = 0;
  // What Delete removes.
  enum class DeleteScope {
    kEverything,  // the source and what podrun made for it (a MIG's template and policy): down
    kVms,         // only what holds the VMs (a MIG's group; its template and policy stay for the
                  // Create that follows): a recreation
  };
  // Deletes the source (a node with its queued resource; a MIG's group, and with kEverything the
  // instance template and workload policy podrun made for it) and waits until it is gone. False
  // when nothing existed. Throws as Create.
  virtual bool Delete(DeleteScope scope = DeleteScope::kEverything) = 0;
  // Why an existing source is not what `create` makes (a TPU node of another accelerator type or
  // software version: naming both), or "" (also when it does not exist). Throws as Describe.
  virtual std::string DiffersFrom(const TpuCreate& create) = 0;
  // The SSH host keys the VMs of `state` (a ready answer of Describe) publish (guest attributes
  // `hostkeys/`), keyed by each VM's place in state.workers, so that each VM's keys are pinned
  // to its own address before anything connects to it, whether or not the API shows the TPU
  // worker numbers (where it does, the place is the number). Throws as Describe.
  virtual TpuHostKeys PublishedHostKeys(const SourceState& state) = 0;
};

// The source `ref` names; its answers are cached under `cache_dir`. Throws Error(kUsage) for a
// name, zone or project the API would not allow (tpu_names.h).
std::unique_ptr<PodSource> MakePodSource(const PodSourceRef& ref,
                                         const std::filesystem::path& cache_dir);

// A TPU node as the API described it (`node` of `query`), as a SourceState.
SourceState SourceStateOfNode(const SliceRef& query, const TpuNode& node);

// "tpu" or "mig", as the job record and --tpu/--mig name them.
const char* PodSourceKindName(PodSourceKind kind);
// "tpu node-1", "mig slice-1": a slice named as --tpu/--mig would (status --json's
// recovering.slice).
std::string SliceLabel(const PodSourceRef& ref);
// "TPU node" or "MIG slice", for sentences.
const char* PodSourceNoun(PodSourceKind kind);

}  // namespace podrun
