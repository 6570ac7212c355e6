// Reading a MIG slice's instances from gcloud (see mig_instances.h).
#include "launcher/pod/mig_instances.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "launcher/base/error.h"
#include "launcher/pod/host_list.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {
namespace {

Error AnswerError(const std::string& what, const std::string& why) {
  return Error(ExitCode::kUnreachable, fmt::format("{}: gcloud's answer {}", what, why));
}

nlohmann::json ParseList(std::string_view json, const std::string& what, const char* kind) {
  nlohmann::json list;
  try {
    list = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw AnswerError(what, fmt::format("is not JSON ({})", e.what()));
  }
  if (!list.is_array()) throw AnswerError(what, fmt::format("is not a list of {}", kind));
  return list;
}

// A string field ("" when missing); throws when it is there but not a string.
std::string Text(const nlohmann::json& object, const char* key, const std::string& what) {
  if (!object.is_object()) throw AnswerError(what, "has an entry that is not an object");
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) throw AnswerError(what, fmt::format("has a {} that is not a string", key));
  return it->get<std::string>();
}

std::string LastPart(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// A TPU worker number as metadata holds it: "0".."9999".
std::optional<int> WorkerNumber(const std::string& text) {
  static const std::regex kNumber("[0-9]{1,4}");
  if (!std::regex_match(text, kNumber)) return std::nullopt;
  return std::stoi(text);
}

// The worker number in `tpu-env` (lines `KEY: 'VALUE'`): its WORKER_ID.
std::optional<int> TpuEnvWorkerId(const std::string& tpu_env) {
  static const std::regex kLine("(^|\n)WORKER_ID: *'?([0-9]{1,4})'?");
  std::smatch m;
  if (!std::regex_search(tpu_env, m, kLine)) return std::nullopt;
  return std::stoi(m[2].str());
}

}  // namespace

std::vector<std::string> GcloudMigListInstancesCommand(const SliceRef& mig) {
  CheckSliceRef(mig);
  std::vector<std::string> argv = {GcloudProgram(),  "compute", "instance-groups", "managed",
                                   "list-instances", mig.name,  "--zone",          mig.zone};
  if (mig.project) argv.insert(argv.end(), {"--project", *mig.project});
  argv.push_back("--format=json");
  return argv;
}

std::vector<std::string> GcloudMigInstancesCommand(const SliceRef& mig,
                                                   const std::vector<std::string>& instances) {
  CheckSliceRef(mig);
  std::string filter = "--filter=name=(";
  for (const std::string& name : instances) {
    if (std::string problem = TpuNodeNameProblem(name); !problem.empty()) {
      throw UsageError(fmt::format("instance name '{}': {}", name, problem));
    }
    filter += " " + name;
  }
  filter += " )";
  std::vector<std::string> argv = {GcloudProgram(), "compute", "instances",
                                   "list",          "--zones", mig.zone};
  if (mig.project) argv.insert(argv.end(), {"--project", *mig.project});
  argv.push_back(filter);
  argv.push_back("--format=json");
  return argv;
}

std::vector<ManagedInstance> ParseManagedInstances(std::string_view json, const std::string& what) {
  std::vector<ManagedInstance> out;
  for (const nlohmann::json& entry : ParseList(json, what, "managed instances")) {
    ManagedInstance m;
    m.name = Text(entry, "name", what);
    if (m.name.empty()) m.name = LastPart(Text(entry, "instance", what));
    if (std::string problem = TpuNodeNameProblem(m.name); !problem.empty()) {
      throw AnswerError(what, fmt::format("has a bad instance name '{}' ({})", m.name, problem));
    }
    m.status = Text(entry, "instanceStatus", what);
    m.current_action = Text(entry, "currentAction", what);
    const auto attempt = entry.find("lastAttempt");
    if (attempt != entry.end() && attempt->is_object()) {
      const auto errors = attempt->find("errors");
      if (errors != attempt->end() && errors->is_object()) {
        const auto list = errors->find("errors");
        if (list != errors->end() && list->is_array() && !list->empty()) {
          const std::string code = Text((*list)[0], "code", what);
          const std::string message = Text((*list)[0], "message", what);
          m.last_error_code = code;
          m.last_error = message.empty() ? code : code + ": " + message;
          if (m.last_error.size() > 300) m.last_error.resize(300);
        }
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

bool IsMigStockoutCode(const std::string& code) {
  return code == "ZONE_RESOURCE_POOL_EXHAUSTED" || code == "RESOURCE_EXHAUSTED" ||
         code == "STOCKOUT";
}

std::string MigNotReady(const std::string& mig_name,
                        const std::vector<ManagedInstance>& instances) {
  if (instances.empty()) return fmt::format("mig {} has no instances", mig_name);
  for (const ManagedInstance& m : instances) {
    const bool acting = !m.current_action.empty() && m.current_action != "NONE";
    if (m.status != "RUNNING") {
      return fmt::format("mig {}: instance {} is {}{}, not RUNNING", mig_name, m.name,
                         m.status.empty() ? "in no state" : m.status,
                         acting ? fmt::format(" (action {})", m.current_action) : "");
    }
    if (acting) {
      return fmt::format("mig {} is not stable: instance {} is RUNNING but the group is {} it",
                         mig_name, m.name, m.current_action);
    }
  }
  return "";
}

std::vector<SourceWorker> ParseMigInstances(std::string_view json,
                                            const std::vector<ManagedInstance>& instances,
                                            const std::string& what, std::string* project) {
  std::map<std::string, SourceWorker> found;
  for (const nlohmann::json& entry : ParseList(json, what, "instances")) {
    SourceWorker w;
    w.name = Text(entry, "name", what);
    w.state = Text(entry, "status", what);
    const std::string self = Text(entry, "selfLink", what);
    if (project != nullptr && project->empty()) {
      static const std::regex kProject("/projects/([^/]+)/");
      std::smatch m;
      if (std::regex_search(self, m, kProject) && ProjectIdProblem(m[1].str()).empty()) {
        *project = m[1].str();
      }
    }
    // Addresses reach ssh's ProxyCommand, exportfs and sshfs: the same rules as --hosts.
    auto address = [&](const std::string& value, const char* key) {
      try {
        ValidateHost(value, value);
      } catch (const Error& e) {
        throw AnswerError(what,
                          fmt::format("has a bad {} for instance {} ({})", key, w.name, e.what()));
      }
      return value;
    };
    const auto nics = entry.find("networkInterfaces");
    if (nics != entry.end() && nics->is_array() && !nics->empty()) {
      const nlohmann::json& nic = (*nics)[0];
      const std::string ip = Text(nic, "networkIP", what);
      if (!ip.empty()) w.internal_ip = address(ip, "networkIP");
      const auto configs = nic.find("accessConfigs");
      if (configs != nic.end() && configs->is_array() && !configs->empty()) {
        const std::string nat = Text((*configs)[0], "natIP", what);
        if (!nat.empty()) w.external_ip = address(nat, "natIP");
      }
    }
    const auto metadata = entry.find("metadata");
    if (metadata != entry.end() && metadata->is_object()) {
      const auto items = metadata->find("items");
      if (items != metadata->end() && items->is_array()) {
        for (const nlohmann::json& item : *items) {
          const std::string key = Text(item, "key", what);
          if (key == "agent-worker-number") {
            w.tpu_worker_number = WorkerNumber(Text(item, "value", what));
          } else if (key == "tpu-env" && !w.tpu_worker_number) {
            w.tpu_worker_number = TpuEnvWorkerId(Text(item, "value", what));
          }
        }
      }
    }
    found[w.name] = std::move(w);
  }
  std::vector<SourceWorker> out;
  for (const ManagedInstance& m : instances) {
    auto it = found.find(m.name);
    if (it == found.end()) throw AnswerError(what, fmt::format("has no instance {}", m.name));
    if (it->second.internal_ip.empty()) {
      throw AnswerError(what, fmt::format("has no networkIP for instance {}", m.name));
    }
    out.push_back(std::move(it->second));
  }
  return out;
}

}  // namespace podrun
