// AttemptPlan: everything one attempt of a job runs from: the job's record, the spec, the
// resolved pod, the secrets and overrides. `launch` and `rerun` build it; RunAttempt runs it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "launcher/connect/pod.h"
#include "launcher/spec/spec.h"
#include "launcher/store/job_store.h"

namespace podrun {

// For a lost worker's index: why it is gone (e.g. "preempted: TPU node X is PREEMPTED
// (gcloud)"), or nullopt when nothing says so. Thread-safe.
using LostWorkerReason = std::function<std::optional<std::string>(int index)>;

struct AttemptPlan {
  JobRecord job;  // as created in the store
  int attempt = 1;
  std::string resumed_from;  // why this attempt runs again: failure, hang, preemption; "" first
  JobSpec spec;
  Pod pod;
  std::filesystem::path home;                    // $PODRUN_HOME
  std::map<std::string, std::string> secrets;    // values: sent to agents, never stored
  std::map<std::string, std::string> overrides;  // -e
  bool detach = false;
  bool force_setup = false;  // run the spec's setup whatever the workers' stamps say
  std::string setup_stamp;   // SetupStamp(spec, overrides), when the spec has a setup
  // Why a worker out of reach is gone, when its slice (a TPU node, a MIG) says so (recovery's
  // SourceStates):
  // called from the attempt's threads; unset: nobody asks.
  LostWorkerReason lost_worker_reason;
};

// What an attempt reads from the launcher's environment and disk, before anything is recorded
// (an unreadable setup input is a bad spec: exit 2, no job left behind): the secrets' values
// and the setup stamp. Throws Error(kUsage) as ReadSecrets and SetupStamp do.
struct AttemptInputs {
  std::map<std::string, std::string> secrets;
  std::string setup_stamp;  // empty when the spec has no setup
};
AttemptInputs ReadAttemptInputs(const JobSpec& spec,
                                const std::map<std::string, std::string>& overrides);

// The plan of attempt `attempt` of `job` (recorded), as `launch` and `rerun` run it.
struct AttemptOptions {
  bool detach = false;
  bool force_setup = false;
};
AttemptPlan MakeAttemptPlan(JobRecord job, int attempt, JobSpec spec, Pod pod,
                            std::filesystem::path home, AttemptInputs inputs,
                            std::map<std::string, std::string> overrides, AttemptOptions options);

}  // namespace podrun
