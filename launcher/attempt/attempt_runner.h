// AttemptRunner: one attempt of a job, end to end: connect to every selected worker and
// bootstrap its agent, prepare all, barrier, GO to all at once, stream and merge the logs, stop
// the gang on the first failure, report the root cause, and record it all in the job store.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "launcher/error.h"
#include "launcher/job/job_store.h"
#include "launcher/job/spec.h"
#include "launcher/pod/pod_options.h"

namespace podrun {

struct AttemptPlan {
  JobRecord job;  // as created in the store
  int attempt = 1;
  JobSpec spec;
  Pod pod;
  std::filesystem::path home;                    // $PODRUN_HOME
  std::map<std::string, std::string> secrets;    // values: sent to agents, never stored
  std::map<std::string, std::string> overrides;  // -e
  bool detach = false;
  bool force_setup = false;  // run the spec's setup whatever the workers' stamps say
  std::string setup_stamp;   // SetupStamp(spec, overrides), when the spec has a setup
};

// Runs the attempt and returns the contract's exit code. Prints progress and the outcome to
// stderr and the merged log to stdout/stderr. Ctrl-C stops the job on every worker (130).
// Process-wide effects: SIGINT is blocked in the calling thread (and so in every thread the
// attempt starts) and taken by a watcher thread for the attempt's duration; SIGPIPE is ignored
// for good (tunnels and gRPC write to sockets whose peers may be gone). The open-files limit
// is the caller's (EnsureOpenFiles).
ExitCode RunAttempt(JobStore& store, const AttemptPlan& plan);

}  // namespace podrun
