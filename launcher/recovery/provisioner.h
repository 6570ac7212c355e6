// Provisioner: makes a pod's slice exist and be ready, through the user's gcloud, whatever its
// source (docs/architecture.md, "Pod sources"): a Cloud TPU node (TpuProvisioner, with its
// queued resources) or any other source (SourceProvisioner: a MIG slice). `up`, `down`, a
// launch's provisioning and recovery hold a Provisioner and never ask which kind it drives.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>

#include "launcher/pod/pod_source.h"
#include "launcher/recovery/tpu_provisioner.h"

namespace podrun {

// A slice made ready.
struct SliceReady {
  SourceState state;  // its workers, in TPU worker order when the API says it
  TpuNodeAction action = TpuNodeAction::kExisted;
  double waited_seconds = 0;  // from the first gcloud call to ready
};

class Provisioner {
 public:
  virtual ~Provisioner() = default;
  // "tpu node-1 (zone Z)", "mig slice-1 (zone Z)", for messages.
  virtual std::string What() const = 0;
  // Makes the slice ready: an existing ready one is used as it is; a missing one is created; a
  // preempted one is deleted and created again (only with `recreate_preempted`; else
  // Error(kUnreachable)); one being made or repaired is waited for. A create refused for
  // capacity is tried again until the create's capacity_wait. Throws Error(kUnreachable) with
  // gcloud's words, Error(kInterrupted) when a wait was given up; what it created is deleted
  // first (a TPU node's queued resource: unless options.keep_queued).
  virtual SliceReady Ensure(bool recreate_preempted = true) = 0;
  // Deletes the slice whatever its state, creates it again, waits (as Ensure after a create).
  virtual SliceReady Recreate() = 0;
  // Deletes the slice and what podrun made for it. False when nothing existed.
  virtual bool Delete() = 0;
};

// The provisioner of `ref` made with `create`; `poll`, `wait` and `options` as TpuProvisioner's.
// `cache_dir`: where the source caches its answers (dropped as the slice changes).
std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& ref, const TpuCreate& create,
                                             const std::filesystem::path& cache_dir,
                                             std::chrono::seconds poll, TpuWait wait,
                                             TpuProvisionerOptions options = {});

}  // namespace podrun
