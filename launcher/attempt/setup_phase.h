// The spec's `setup`, run on every worker in parallel before the barrier (docs/reference.md, the
// spec's `setup` and `setup_inputs`): as a job attempt of its own ("<job id>.setup") through the
// same agent path as `run`, its output merged and labelled like run output, skipped on a worker
// whose stamp matches (the setup text, workdir, env and the content of setup_inputs), unless
// forced.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/attempt/log_follower.h"
#include "launcher/output/attempt_output.h"
#include "launcher/spec/spec.h"

namespace podrun {

// The stamp of a setup: SHA-256 over the setup text, the workdir, the env (the spec's and the
// -e values; secrets by name only) and the path and content of each of setup_inputs (relative
// to the spec file's directory). Throws Error(kUsage) naming a setup input that cannot be read.
std::string SetupStamp(const JobSpec& spec, const std::map<std::string, std::string>& overrides);

// The job id a setup attempt runs under on the agents.
std::string SetupJobId(const std::string& job_id);

struct SetupWorker {
  int index = 0;
  std::string description;  // "w3 (root@10.0.0.5)"
  std::shared_ptr<AgentClient> client;
  AgentPrepareRequest request;  // the run's Prepare request; the setup's is made from it
  LogFollowHooks hooks;         // to resume the setup's log after a broken connection
};

struct SetupResult {
  int index = 0;
  bool cached = false;            // the stamp matched: nothing ran
  std::optional<ProcessEnd> end;  // how the setup ended (when it ran)
  std::string error;              // set when it failed (could not run, or ended badly)
  int64_t ended_ns = 0;           // wall clock: when it was through (cached, ended or failed)
};

// Runs the setup on every worker (blocking), output through `output`. `force`: ignore stamps.
std::vector<SetupResult> RunSetup(const JobSpec& spec, const std::string& stamp, bool force,
                                  const std::vector<SetupWorker>& workers, AttemptOutput& output);

// "setup done in 1.20 s; ran on w0-2; cached (unchanged) on w3" (or "failed").
std::string DescribeSetup(size_t workers, const std::vector<int>& ran,
                          const std::vector<int>& cached, double seconds);

}  // namespace podrun
