// TpuProvisioner: makes a Cloud TPU node exist and be READY, through the user's gcloud
// (docs/reference.md, "Provisioning and recovery"): creates it when missing (directly or through a
// queued resource named after it), recreates it when preempted, deletes it, and waits with the
// API's states on the live line ("tpu node-1: WAITING_FOR_RESOURCES 12m") and on stderr.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/connect/pod.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/recovery/api_outage.h"

namespace podrun {

// Sleeps for the given time; false when the wait was given up (Ctrl-C, a stop), at once when it
// was given up before (a zero wait asks only that).
using TpuWait = std::function<bool(std::chrono::seconds)>;

// A slice preempted while podrun was making it (a Spot VM taken before the slice was ready):
// made again by the provisioner that made it; `state` is the API's word (PREEMPTED, TERMINATED).
class PreemptedWhileMade : public Error {
 public:
  PreemptedWhileMade(const std::string& message, std::string state)
      : Error(ExitCode::kUnreachable, message), state(std::move(state)) {}
  std::string state;
};

// What EnsureTpuNode did.
enum class TpuNodeAction { kExisted, kCreated, kRecreated };

struct TpuNodeReady {
  TpuNode node;
  TpuNodeAction action = TpuNodeAction::kExisted;
  double waited_seconds = 0;  // from the first gcloud call to READY
};

// The first wait after a create refused for capacity: $PODRUN_TPU_CAPACITY_BACKOFF_SECONDS (tests),
// else 30 s. Each next wait doubles, up to kMaxCapacityBackoff.
std::chrono::seconds TpuCapacityBackoff();
inline constexpr std::chrono::seconds kMaxCapacityBackoff = std::chrono::minutes(10);
// How long a node podrun created may stay CREATING (its queued resource PROVISIONING) before it
// is deleted and created again: $PODRUN_TPU_CREATING_DEADLINE_SECONDS (tests), else 30 min.
std::chrono::seconds TpuCreatingDeadline();
// How many times a node stuck in CREATING is deleted and created again before podrun gives up.
inline constexpr int kStuckCreateRetries = 2;

// How a TpuProvisioner waits and what it tells about it; the defaults suit the commands.
struct TpuProvisionerOptions {
  // Called, on the calling thread, with what the provisioner waits for each time that changes
  // and at each try after a stockout: "tpu node-1: no capacity in us-central2-b
  // (RESOURCE_EXHAUSTED): trying again in 1m (waited 3m of 6h)", "tpu node-1:
  // WAITING_FOR_RESOURCES". For `status`.
  std::function<void(const std::string& what)> on_wait = {};
  // False (the default): a queued resource this provisioner created is deleted when waiting for
  // it fails or is given up (it would hold quota). True: kept (`podrun up --keep-queued`).
  bool keep_queued = false;
  // Called with the API's word (PREEMPTED) when a slice this provisioner was making was preempted
  // before it was ready, before it is made again: one more preemption, for the job's records.
  std::function<void(const std::string& state)> on_preempted = {};
  std::chrono::seconds first_capacity_backoff = TpuCapacityBackoff();
  std::chrono::seconds creating_deadline = TpuCreatingDeadline();
  // The clock deadlines are measured on (tests give one that their `wait` moves on).
  std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now;
};

class TpuProvisioner {
 public:
  // `poll`: how often gcloud is asked while waiting; `wait` sleeps between the questions and
  // between the tries after a stockout.
  TpuProvisioner(TpuQuery node, TpuCreate create, std::chrono::seconds poll, TpuWait wait,
                 TpuProvisionerOptions options = {})
      : node_(std::move(node)),
        create_(std::move(create)),
        poll_(poll),
        wait_(std::move(wait)),
        options_(std::move(options)),
        outage_("the TPU API", CapacityWaitOf(create_), wait_, options_.on_wait, options_.clock) {}

  // Makes the node READY: an existing READY node of the same type and version is used as it is
  // (another type or version: Error(kUsage) naming both); a missing one is created; a preempted
  // one is deleted and created again (only with `recreate_preempted`; else Error(kUnreachable)).
  // Then waits for READY. A create refused for capacity is tried again, backing off, until the
  // create's capacity_wait (then Error(kUnreachable) naming the stockout and the time waited); a
  // node it created that stays CREATING past the creating deadline is deleted and created again
  // (kStuckCreateRetries times). Throws Error(kUnreachable) with gcloud's words when gcloud fails
  // or a queued resource fails, Error(kInterrupted) when a wait was given up; either way a queued
  // resource it created is deleted first unless options.keep_queued.
  TpuNodeReady Ensure(bool recreate_preempted = true);
  // Deletes the node (and its queued resource) whatever its state, creates it again, waits (as
  // Ensure does after a create).
  TpuNodeReady Recreate();
  // Deletes the queued resource (with its node) and the node. False when neither existed.
  bool Delete();

 private:
  // Create, then WaitUntilReady; a node stuck in CREATING is deleted and created again; a queued
  // resource created here is deleted when the wait fails (unless keep_queued).
  TpuNode CreateAndWait();
  // gcloud create, tried again after stockouts until capacity_wait.
  void Create();
  // READY: the node; nullopt when a node this call created stayed CREATING past the deadline.
  std::optional<TpuNode> WaitUntilReady(bool created_here);
  // Deletes the queued resource this provisioner created after `why`; says so. False when
  // there was none (the create never reached the API) or it could not be deleted (said).
  bool DeleteCreatedQueuedResource(const std::string& why);
  void TellWait(const std::string& what) const;
  double SecondsSince(std::chrono::steady_clock::time_point t) const;
  // The node and its queued resource as gcloud says now, its bad minutes waited out.
  std::optional<TpuNode> FindNode();
  std::optional<QueuedResource> FindQueued();
  // An earlier delete of the node (a keeper killed in it) waited for until it is gone.
  void WaitUntilDeleted();

  const TpuQuery node_;
  const TpuCreate create_;
  const std::chrono::seconds poll_;
  const TpuWait wait_;
  const TpuProvisionerOptions options_;
  ApiOutage outage_;  // gcloud's transient failures, waited out up to capacity_wait
};

// `gcloud ... describe` every `fallback`, or every $PODRUN_TPU_POLL_SECONDS (tests).
std::chrono::seconds TpuPollInterval(std::chrono::seconds fallback);

}  // namespace podrun
