// Provisioner: the one provisioning engine (docs/architecture.md, "Provisioning"): makes a pod's
// slice exist and be ready through the user's gcloud, whatever its source (a Cloud TPU node,
// directly or through its queued resource; a MIG slice: its policy, template and group), driving
// only its PodSource. Creating, waiting, retrying after a stockout or the API's bad minutes,
// moving zones (create.fallback_zones), undoing and recreating are written once here; `up`,
// `down`, a launch's provisioning and recovery hold a Provisioner and never ask which kind it
// drives.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "launcher/base/error.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/recovery/provision_limits.h"

namespace podrun {

// Sleeps for the given time; false when the wait was given up (Ctrl-C, a stop), at once when it
// was given up before (a zero wait asks only that).
using ProvisionWait = std::function<bool(std::chrono::milliseconds)>;

// A slice preempted while podrun was making it (a Spot VM taken before the slice was ready):
// made again by the provisioner that made it; `state` is the API's word (PREEMPTED, TERMINATED).
class PreemptedWhileMade : public Error {
 public:
  PreemptedWhileMade(const std::string& message, std::string state)
      : Error(ExitCode::kUnreachable, message), state(std::move(state)) {}
  std::string state;
};

// What Ensure or Recreate did.
enum class SliceAction { kExisted, kCreated, kRecreated };

// A slice made ready.
struct SliceReady {
  PodSourceRef where;  // the slice, in the zone it lives in (one of SliceZones)
  SourceState state;   // its workers, in TPU worker order when the API says it
  SliceAction action = SliceAction::kExisted;
  double waited_seconds = 0;  // from the first gcloud call to ready
};

// How a Provisioner waits and what it tells about it; the defaults suit the commands.
struct ProvisionerOptions {
  // Called, on the calling thread, with what the provisioner waits for each time that changes
  // and at each try after a stockout: "tpu node-1: no capacity in us-central2-b
  // (RESOURCE_EXHAUSTED): trying again in 1m (waited 3m of 6h)", "tpu node-1:
  // WAITING_FOR_RESOURCES". For `status`.
  std::function<void(const std::string& what)> on_wait = {};
  // False (the default): what a failed or given-up create made is deleted (a queued resource
  // holds quota). True: a TPU node's queued resource is kept (`podrun up --keep-queued`).
  bool keep_queued = false;
  // Called with the API's word (PREEMPTED) when a slice this provisioner was making was preempted
  // before it was ready, before it is made again: one more preemption, for the job's records.
  std::function<void(const std::string& state)> on_preempted = {};
  std::chrono::seconds first_capacity_backoff = CapacityBackoff();
  std::chrono::seconds creating_deadline = CreatingDeadline();
  // The clock deadlines are measured on (tests give one that their `wait` moves on).
  std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now;
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  // "tpu node-1 (zone Z)", "mig slice-1 (zone Z)": the slice in its own zone, for messages.
  virtual std::string What() const = 0;
  // Makes the slice ready. It is looked for in each of its zones (SliceZones), its own first:
  // an existing ready one is used as it is (a TPU node of another type or version:
  // Error(kUsage) naming both); a preempted one is deleted and created again (only with
  // `recreate_preempted`; else Error(kUnreachable)); one being made, repaired or deleted is waited
  // for; a missing one is created. A create refused for capacity moves on to the next zone at
  // once, and after the last one waits (backing off) and begins again with the slice's own zone,
  // until the create's capacity_wait. Throws Error(kUnreachable) with gcloud's words,
  // Error(kInterrupted) when a wait was given up; what it created is deleted first (a queued
  // resource: unless options.keep_queued).
  virtual SliceReady Ensure(bool recreate_preempted = true) = 0;
  // Deletes the slice's VMs wherever they live, creates it again beginning with its own zone,
  // waits (as Ensure after a create).
  virtual SliceReady Recreate() = 0;
  // Deletes the slice and what podrun made for it, in every one of its zones. False when nothing
  // existed.
  virtual bool Delete() = 0;
};

// Makes the source of a slice in a given zone (MakePodSource, or a test's).
using SourceMaker = std::function<std::unique_ptr<PodSource>(const PodSourceRef&)>;

// The provisioner of the slice `home` (its own zone: the spec's) made with `create`, whose
// sources come from `make_source`. `poll`: how often gcloud is asked while waiting; `wait` sleeps
// between the questions and between the tries after a stockout.
std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& home, const TpuCreate& create,
                                             SourceMaker make_source, std::chrono::seconds poll,
                                             ProvisionWait wait, ProvisionerOptions options = {});

// The same with the sources MakePodSource makes, their answers cached under `cache_dir`.
std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& home, const TpuCreate& create,
                                             const std::filesystem::path& cache_dir,
                                             std::chrono::seconds poll, ProvisionWait wait,
                                             ProvisionerOptions options = {});

}  // namespace podrun
