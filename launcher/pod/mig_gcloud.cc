// The gcloud command lines of a MIG slice's provisioning (see mig_gcloud.h).
#include "launcher/pod/mig_gcloud.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"
#include "proto/sha256.h"

namespace podrun {
namespace {

constexpr size_t kMaxName = 63;

// `gcloud [beta] compute GROUP...`, then the rest, [--project P] and the tail; `deadline`: what
// the command does (gcloud_run.h).
GcloudCommand Command(const SliceRef& mig, std::vector<std::string> words, const char* tail,
                      std::chrono::seconds deadline, bool beta = false) {
  CheckSliceRef(mig);
  std::vector<std::string> argv = {GcloudProgram()};
  if (beta) argv.push_back("beta");
  argv.push_back("compute");
  argv.insert(argv.end(), words.begin(), words.end());
  if (mig.project) argv.insert(argv.end(), {"--project", *mig.project});
  argv.push_back(tail);
  return {std::move(argv), deadline};
}

// A describe's or a delete's deadline.
std::chrono::seconds DeadlineOfVerb(const std::string& verb) {
  return verb == "delete" ? kGcloudDeleteDeadline : kGcloudQueryDeadline;
}

// The settings of a part's create (its flags but the name and the description; the template's
// with "beta" first when it needs gcloud beta).
std::vector<std::string> PolicySettings(const SliceRef& mig, const TpuCreate& create) {
  return {"--type=HIGH_THROUGHPUT", "--accelerator-topology=" + create.topology,
          "--region=" + RegionOfZone(mig.zone)};
}

std::vector<std::string> TemplateSettings(const TpuCreate& create) {
  const std::string model = MigProvisioningOf(create);
  std::vector<std::string> words = {"--machine-type=" + create.machine_type,
                                    "--image-family=" + create.image_family,
                                    "--image-project=" + create.image_project,
                                    // The VMs publish their host keys as guest attributes only
                                    // where this is set (podrun pins them: mig_host_keys.h).
                                    "--metadata=enable-guest-attributes=TRUE"};
  if (model == "spot") {
    words.insert(words.end(), {"--provisioning-model=SPOT", "--instance-termination-action=STOP",
                               "--maintenance-policy=TERMINATE"});
  } else if (model == "flex_start") {
    words.insert(words.begin(), "beta");
    words.insert(words.end(), {"--provisioning-model=FLEX_START", "--reservation-affinity=none"});
  }
  if (create.max_run_duration) {
    words.push_back("--max-run-duration=" + *create.max_run_duration);
    if (model != "spot") words.push_back("--instance-termination-action=DELETE");
  }
  return words;
}

// The first 16 hex digits of the SHA-256 of `settings`, one a line.
std::string Digest(const std::vector<std::string>& settings) {
  std::string text;
  for (const std::string& word : settings) text += word + "\n";
  return Sha256Hex(text).substr(0, 16);
}

std::string Description(const char* what, const SliceRef& mig,
                        const std::vector<std::string>& settings) {
  return fmt::format("--description={} {} of MIG {} (settings {})", kMigMadeByPodrun, what,
                     mig.name, Digest(settings));
}

}  // namespace

std::string MigPartName(const std::string& mig) {
  constexpr std::string_view kSuffix = "-podrun";
  if (mig.size() + kSuffix.size() <= kMaxName) return mig + std::string(kSuffix);
  // Stable across builds and machines (std::hash is not): the same group names the same parts.
  const std::string hash = Sha256Hex(mig).substr(0, 5);
  return mig.substr(0, kMaxName - kSuffix.size() - hash.size() - 1) + "-" + hash +
         std::string(kSuffix);
}

std::string RegionOfZone(const std::string& zone) {
  const size_t dash = zone.rfind('-');
  return dash == std::string::npos ? zone : zone.substr(0, dash);
}

GcloudCommand GcloudMigPolicyCreateCommand(const SliceRef& mig, const TpuCreate& create) {
  const std::vector<std::string> settings = PolicySettings(mig, create);
  std::vector<std::string> words = {"resource-policies", "create", "workload-policy",
                                    MigPartName(mig.name)};
  words.insert(words.end(), settings.begin(), settings.end());
  words.push_back(Description("workload policy", mig, settings));
  return Command(mig, words, "--format=json", kGcloudCreateDeadline);
}

GcloudCommand GcloudMigTemplateCreateCommand(const SliceRef& mig, const TpuCreate& create) {
  std::vector<std::string> settings = TemplateSettings(create);
  const std::string description = Description("instance template", mig, settings);
  const bool beta = !settings.empty() && settings.front() == "beta";
  if (beta) settings.erase(settings.begin());
  std::vector<std::string> words = {"instance-templates", "create", MigPartName(mig.name)};
  words.insert(words.end(), settings.begin(), settings.end());
  words.push_back(description);
  return Command(mig, words, "--format=json", kGcloudCreateDeadline, beta);
}

std::string MigPolicyDigest(const SliceRef& mig, const TpuCreate& create) {
  return Digest(PolicySettings(mig, create));
}

std::string MigTemplateDigest(const TpuCreate& create) { return Digest(TemplateSettings(create)); }

GcloudCommand GcloudMigGroupCreateCommand(const SliceRef& mig, const TpuCreate& create,
                                          const std::string& policy_url) {
  const std::string model = MigProvisioningOf(create);
  const int size = model == "flex_start" ? 0 : MigVmCount(create).value_or(0);
  std::vector<std::string> words = {"instance-groups",
                                    "managed",
                                    "create",
                                    mig.name,
                                    "--zone=" + mig.zone,
                                    "--template=" + MigPartName(mig.name),
                                    fmt::format("--size={}", size),
                                    "--workload-policy=" + policy_url};
  if (model == "spot") words.push_back("--default-action-on-vm-failure=do-nothing");
  return Command(mig, words, "--format=json", kGcloudCreateDeadline);
}

GcloudCommand GcloudMigResizeRequestCommand(const SliceRef& mig, const TpuCreate& create) {
  std::vector<std::string> words = {"instance-groups",
                                    "managed",
                                    "resize-requests",
                                    "create",
                                    mig.name,
                                    "--resize-request=" + MigPartName(mig.name),
                                    fmt::format("--resize-by={}", MigVmCount(create).value_or(0)),
                                    "--zone=" + mig.zone};
  if (create.max_run_duration) {
    words.push_back("--requested-run-duration=" + *create.max_run_duration);
  }
  return Command(mig, words, "--format=json", kGcloudCreateDeadline);
}

GcloudCommand GcloudMigGroupDeleteCommand(const SliceRef& mig) {
  return Command(mig, {"instance-groups", "managed", "delete", mig.name, "--zone=" + mig.zone},
                 "--quiet", kGcloudDeleteDeadline);
}

GcloudCommand GcloudMigGroupDescribeCommand(const SliceRef& mig) {
  return Command(mig, {"instance-groups", "managed", "describe", mig.name, "--zone=" + mig.zone},
                 "--format=json", kGcloudQueryDeadline);
}

GcloudCommand GcloudMigTemplateCommand(const SliceRef& mig, const std::string& verb) {
  return Command(mig, {"instance-templates", verb, MigPartName(mig.name)},
                 verb == "delete" ? "--quiet" : "--format=json", DeadlineOfVerb(verb));
}

GcloudCommand GcloudMigPolicyCommand(const SliceRef& mig, const std::string& verb) {
  return Command(
      mig, {"resource-policies", verb, MigPartName(mig.name), "--region=" + RegionOfZone(mig.zone)},
      verb == "delete" ? "--quiet" : "--format=json", DeadlineOfVerb(verb));
}

GcloudCommand GcloudMigHostKeysCommand(const SliceRef& mig, const std::string& instance) {
  if (std::string problem = TpuNodeNameProblem(instance); !problem.empty()) {
    throw UsageError(fmt::format("instance name '{}': {}", instance, problem));
  }
  return Command(mig,
                 {"instances", "get-guest-attributes", instance, "--zone=" + mig.zone,
                  "--query-path=hostkeys/"},
                 "--format=json", kGcloudQueryDeadline);
}

namespace {

// The object of a create's or describe's JSON: itself, or the one element of a list.
nlohmann::json OneObject(std::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json);
  if (j.is_array() && j.size() == 1) j = j[0];
  return j;
}

}  // namespace

std::string PolicyUrlOf(std::string_view json) {
  static const std::regex kUrl(
      "https://[a-z0-9.-]+/compute/(v1|beta)/projects/[a-z0-9:.-]+/regions/[a-z0-9-]+/"
      "resourcePolicies/[a-z0-9-]+");
  try {
    const nlohmann::json j = OneObject(json);
    if (!j.is_object() || !j.contains("selfLink") || !j["selfLink"].is_string()) return "";
    const std::string url = j["selfLink"].get<std::string>();
    return std::regex_match(url, kUrl) ? url : "";
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

bool MigRepairsFailedVms(std::string_view describe_json, const std::string& what) {
  nlohmann::json j;
  try {
    j = OneObject(describe_json);
  } catch (const nlohmann::json::exception&) {
  }
  if (!j.is_object()) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: gcloud's answer is not a group", what));
  }
  const auto policy = j.find("instanceLifecyclePolicy");
  if (policy == j.end() || !policy->is_object()) return true;
  const auto action = policy->find("defaultActionOnFailure");
  return action == policy->end() || !action->is_string() || *action != "DO_NOTHING";
}

bool MadeByPodrun(std::string_view describe_json) {
  return MigPartOwnerOf(describe_json).has_value();
}

std::optional<MigPartOwner> MigPartOwnerOf(std::string_view describe_json) {
  std::string description;
  try {
    const nlohmann::json j = OneObject(describe_json);
    if (!j.is_object() || !j.contains("description") || !j["description"].is_string()) {
      return std::nullopt;
    }
    description = j["description"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  if (!description.starts_with(kMigMadeByPodrun)) return std::nullopt;
  // "podrun: WHAT of MIG NAME (settings DIGEST)"; an older podrun's: "podrun: WHAT of MIG NAME".
  static const std::regex kOwner(" of MIG ([a-z0-9-]+)(?: \\(settings ([0-9a-f]+)\\))?$");
  std::smatch m;
  MigPartOwner owner;
  if (std::regex_search(description, m, kOwner)) {
    owner.mig = m[1].str();
    owner.settings = m[2].str();
  }
  return owner;
}

}  // namespace podrun
