// The environment of a job's `run` (and `setup`) process on one worker (docs/reference.md, "What
// the `run` process gets"), and the parsing of `-e KEY=VALUE`.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace podrun {

// Everything the environment of one worker's process is made from.
struct JobEnvParams {
  std::string job_id;
  int attempt = 1;           // 1, 2, ...
  std::string resumed_from;  // failure, hang or preemption on later attempts; "" on the first
  int worker_index = 0;      // pod-wide index of this worker
  // Every worker of the pod (not only the selected ones), in rank order, as the workers reach
  // each other (on a Cloud TPU: the internal IPs).
  std::vector<std::string> worker_addresses;
  int coordinator_port = 8476;
  bool discovered_cloud_tpu = false;  // true: the TPU runtime sets TPU_WORKER_* itself
  // Multislice (--tpu A,B,... or --mig A,B,...): each worker's slice, in rank order (empty: one
  // slice), and the port of MEGASCALE_COORDINATOR_ADDRESS.
  std::vector<int> worker_slices;
  int megascale_port = 8081;
  std::map<std::string, std::string> spec_env;   // the spec's `env:`
  std::map<std::string, std::string> secrets;    // name -> value, from ReadSecrets
  std::map<std::string, std::string> overrides;  // `-e KEY=VALUE`, from ParseEnvAssignments
};

// A worker's full environment. `secret_names` are the keys of `vars` whose values are secrets:
// send them to the worker, never store or log them.
struct JobEnv {
  std::map<std::string, std::string> vars;
  std::set<std::string> secret_names;
};

// Builds the environment. Precedence, lowest first: podrun's framework variables (MASTER_*,
// RANK, JAX_*, TPU_*, SKYPILOT_*...), the spec's env, the secrets, the `-e` values; the
// PODRUN_* variables always are podrun's. Throws podrun::Error (kUsage) when worker_index is
// outside the pod, the pod is empty, or a `-e` key is also a secret's name.
JobEnv BuildJobEnv(const JobEnvParams& params);

// Looks a variable up in an environment: nullopt when it is not set.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The launcher's own environment (getenv).
std::optional<std::string> LauncherEnv(const std::string& name);

// Reads each secret by name. Throws podrun::Error (kUsage) naming every secret that is not set
// (a set but empty variable is a secret with an empty value).
std::map<std::string, std::string> ReadSecrets(const std::vector<std::string>& names,
                                               const EnvLookup& lookup = LauncherEnv);

// Parses one `-e KEY=VALUE` (VALUE may be empty and may hold '='). Throws podrun::Error (kUsage)
// on a missing '=', an invalid name, or a PODRUN_ name (those are podrun's).
std::pair<std::string, std::string> ParseEnvAssignment(const std::string& arg);

// Parses every `-e`; a later KEY wins over an earlier one.
std::map<std::string, std::string> ParseEnvAssignments(const std::vector<std::string>& args);

}  // namespace podrun
