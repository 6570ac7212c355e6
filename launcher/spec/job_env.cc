// Builds the contract's environment for one worker's process: podrun's own variables, those that
// torch.distributed, JAX, the TPU runtime and SkyPilot scripts expect, and the user's values.
#include "launcher/spec/job_env.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "launcher/base/error.h"
#include "launcher/spec/spec.h"

namespace podrun {
namespace {

// "host:port", with an IPv6 literal in brackets.
std::string HostPort(const std::string& host, int port) {
  bool v6 = host.find(':') != std::string::npos && host.front() != '[';
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (const std::string& part : parts) {
    if (!out.empty()) out += separator;
    out += part;
  }
  return out;
}

bool IsPodrunName(const std::string& name) { return name.rfind("PODRUN_", 0) == 0; }

}  // namespace

JobEnv BuildJobEnv(const JobEnvParams& p) {
  const int num_workers = static_cast<int>(p.worker_addresses.size());
  if (num_workers == 0) throw UsageError("job environment: the pod has no workers");
  if (p.worker_index < 0 || p.worker_index >= num_workers) {
    throw UsageError("job environment: worker " + std::to_string(p.worker_index) +
                     " is not in the pod (" + std::to_string(num_workers) + " workers)");
  }
  const std::string rank = std::to_string(p.worker_index);
  const std::string size = std::to_string(num_workers);
  const std::string& head = p.worker_addresses.front();
  const std::string coordinator = HostPort(head, p.coordinator_port);

  JobEnv env;
  auto& v = env.vars;
  v["MASTER_ADDR"] = head;
  v["MASTER_PORT"] = std::to_string(p.coordinator_port);
  v["RANK"] = rank;
  v["WORLD_SIZE"] = size;
  v["LOCAL_RANK"] = "0";
  v["LOCAL_WORLD_SIZE"] = "1";
  v["JAX_COORDINATOR_ADDRESS"] = coordinator;
  v["JAX_NUM_PROCESSES"] = size;
  v["JAX_PROCESS_ID"] = rank;
  if (!p.discovered_cloud_tpu) {
    v["TPU_WORKER_ID"] = rank;
    v["TPU_WORKER_HOSTNAMES"] = Join(p.worker_addresses, ",");
  }
  if (!p.worker_slices.empty()) {
    if (p.worker_slices.size() != p.worker_addresses.size()) {
      throw UsageError("job environment: a slice for every worker is needed");
    }
    const int slices = *std::max_element(p.worker_slices.begin(), p.worker_slices.end()) + 1;
    if (slices > 1) {  // slice 0's worker 0 coordinates the slices
      v["MEGASCALE_COORDINATOR_ADDRESS"] = HostPort(head, p.megascale_port);
      v["MEGASCALE_PORT"] = std::to_string(p.megascale_port);
      v["MEGASCALE_NUM_SLICES"] = std::to_string(slices);
      v["MEGASCALE_SLICE_ID"] = std::to_string(p.worker_slices[p.worker_index]);
    }
  }
  v["SKYPILOT_NODE_RANK"] = rank;
  v["SKYPILOT_NUM_NODES"] = size;
  v["SKYPILOT_NODE_IPS"] = Join(p.worker_addresses, "\n");

  for (const auto& [name, value] : p.spec_env) v[name] = value;
  for (const auto& [name, value] : p.secrets) {
    v[name] = value;
    env.secret_names.insert(name);
  }
  for (const auto& [name, value] : p.overrides) {
    if (p.secrets.count(name)) {
      throw UsageError("-e " + name + ": " + name +
                       " is a secret (secret_env); set it in the launcher's environment");
    }
    v[name] = value;
  }
  // podrun's own variables win over everything.
  for (auto it = v.begin(); it != v.end();) {
    it = IsPodrunName(it->first) ? v.erase(it) : std::next(it);
  }
  v["PODRUN_JOB_ID"] = p.job_id;
  v["PODRUN_ATTEMPT"] = std::to_string(p.attempt);
  if (!p.resumed_from.empty()) v["PODRUN_RESUMED_FROM"] = p.resumed_from;
  v["PODRUN_WORKER_ID"] = rank;
  v["PODRUN_NUM_WORKERS"] = size;
  v["PODRUN_WORKER_HOSTS"] = Join(p.worker_addresses, ",");
  v["PODRUN_COORDINATOR"] = coordinator;
  return env;
}

std::optional<std::string> LauncherEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::map<std::string, std::string> ReadSecrets(const std::vector<std::string>& names,
                                               const EnvLookup& lookup) {
  std::map<std::string, std::string> secrets;
  std::vector<std::string> missing;
  for (const std::string& name : names) {
    if (!IsValidEnvName(name)) throw UsageError("secret_env: bad variable name '" + name + "'");
    std::optional<std::string> value = lookup(name);
    if (value) {
      secrets[name] = *value;
    } else {
      missing.push_back(name);
    }
  }
  if (!missing.empty()) {
    throw UsageError("secret_env: " + Join(missing, ", ") + (missing.size() == 1 ? " is" : " are") +
                     " not set in the launcher's environment");
  }
  return secrets;
}

std::pair<std::string, std::string> ParseEnvAssignment(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos) throw UsageError("-e " + arg + ": expected KEY=VALUE");
  std::string name = arg.substr(0, eq);
  // Messages name the key only: a value given with -e is not echoed.
  if (!IsValidEnvName(name)) throw UsageError("-e: bad variable name '" + name + "'");
  if (IsPodrunName(name)) throw UsageError("-e " + name + ": PODRUN_ variables are set by podrun");
  return {name, arg.substr(eq + 1)};
}

std::map<std::string, std::string> ParseEnvAssignments(const std::vector<std::string>& args) {
  std::map<std::string, std::string> out;
  for (const std::string& arg : args) {
    auto [name, value] = ParseEnvAssignment(arg);
    out[name] = value;
  }
  return out;
}

}  // namespace podrun
