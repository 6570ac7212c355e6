// The access of Google's APIs, from gcloud's config-helper (see cloud_api_access.h).
#include "launcher/pod/cloud_api_access.h"

#include <fmt/format.h>
#include <time.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <tuple>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {
namespace {

constexpr char kDefaultComputeEndpoint[] = "https://compute.googleapis.com/compute/v1/";
constexpr char kDefaultTpuEndpoint[] = "https://tpu.googleapis.com/";
constexpr auto kUndatedTokenLife = std::chrono::minutes(5);
constexpr auto kRenewBefore = std::chrono::minutes(2);
// How long a gcloud whose access podrun may not use is left alone before it is asked again;
// and one whose config-helper failed (not logged in, the network's bad minute).
constexpr auto kUnusableFor = std::chrono::minutes(10);
constexpr auto kFailedFor = std::chrono::minutes(5);

// The string at `path` (a.b.c) of `j`; "" when absent or not a string.
std::string StringAt(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return "";
    at = &(*at)[key];
  }
  return at->is_string() ? at->get<std::string>() : "";
}

bool HasEntries(const nlohmann::json& properties, const char* section) {
  return properties.contains(section) && properties[section].is_object() &&
         !properties[section].empty();
}

// True for an endpoint a token may be sent to: https, or http to this machine itself.
bool SafeEndpoint(const std::string& endpoint) {
  if (endpoint.starts_with("https://")) return endpoint.size() > 8;
  for (const char* local : {"http://127.0.0.1:", "http://127.0.0.1/", "http://localhost:",
                            "http://localhost/", "http://[::1]:", "http://[::1]/"}) {
    if (endpoint.starts_with(local)) return true;
  }
  return false;
}

// config-helper's token_expiry ("2026-11-28T17:04:05Z"); nullopt when absent or unreadable.
std::optional<std::chrono::system_clock::time_point> ExpiryOf(const std::string& text) {
  struct tm tm = {};
  const char* end = ::strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

}  // namespace

std::optional<CloudApiAccess> ParseGcloudConfigHelper(std::string_view json,
                                                      std::chrono::system_clock::time_point now,
                                                      std::string* why) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) {
    *why = "gcloud config config-helper printed no JSON object";
    return std::nullopt;
  }
  const nlohmann::json properties = j.contains("configuration") && j["configuration"].is_object()
                                        ? j["configuration"].value("properties", nlohmann::json())
                                        : nlohmann::json();
  if (HasEntries(properties, "proxy")) {
    *why = "gcloud's config sets a proxy (proxy/*)";
    return std::nullopt;
  }
  if (HasEntries(properties, "context_aware")) {
    *why = "gcloud's config sets client certificates (context_aware/*)";
    return std::nullopt;
  }
  CloudApiAccess access;
  const std::string universe = StringAt(properties, {"core", "universe_domain"});
  const bool google = universe.empty() || universe == "googleapis.com";
  for (auto [endpoint, name, fallback] :
       {std::tuple{&access.compute_endpoint, "compute", kDefaultComputeEndpoint},
        std::tuple{&access.tpu_endpoint, "tpu", kDefaultTpuEndpoint}}) {
    *endpoint = StringAt(properties, {"api_endpoint_overrides", name});
    if (endpoint->empty()) {
      if (google) *endpoint = fallback;
      continue;
    }
    if (!SafeEndpoint(*endpoint)) {
      *why = fmt::format("the {} endpoint {} is neither https nor loopback", name, *endpoint);
      return std::nullopt;
    }
    if (!endpoint->ends_with('/')) *endpoint += '/';
  }
  if (access.compute_endpoint.empty() && access.tpu_endpoint.empty()) {
    *why = "gcloud's universe is " + universe;
    return std::nullopt;
  }
  access.token = StringAt(j, {"credential", "access_token"});
  if (access.token.empty() || access.token.find_first_of("\r\n\t ") != std::string::npos) {
    *why = "gcloud gave no access token";
    return std::nullopt;
  }
  access.ca_file = StringAt(properties, {"core", "custom_ca_certs_file"});
  access.project = StringAt(properties, {"core", "project"});
  if (!access.project.empty() && !ProjectIdProblem(access.project).empty()) access.project.clear();
  access.quota_project = StringAt(properties, {"billing", "quota_project"});
  if (access.quota_project == "CURRENT_PROJECT") access.quota_project = access.project;
  if (!access.quota_project.empty() && !ProjectIdProblem(access.quota_project).empty()) {
    *why = "gcloud's billing/quota_project is not a project id: " + access.quota_project;
    return std::nullopt;
  }
  const std::optional<std::chrono::system_clock::time_point> expiry =
      ExpiryOf(StringAt(j, {"credential", "token_expiry"}));
  access.expiry = expiry ? *expiry - kRenewBefore : now + kUndatedTokenLife;
  if (access.expiry <= now) {
    *why = "gcloud's token expires within two minutes";
    return std::nullopt;
  }
  return access;
}

namespace {

struct Kept {
  std::mutex mutex;
  std::optional<CloudApiAccess> access;
  std::chrono::system_clock::time_point unusable_until;
};

Kept& KeptAccess() {
  static Kept kept;
  return kept;
}

}  // namespace

std::optional<CloudApiAccess> GcloudApiAccess() {
  Kept& kept = KeptAccess();
  const auto now = std::chrono::system_clock::now();
  {
    std::lock_guard lock(kept.mutex);
    if (kept.access && kept.access->expiry > now) return kept.access;
    if (now < kept.unusable_until) return std::nullopt;
  }
  std::string printed;
  try {
    printed = RunGcloud(GcloudCommand{{GcloudProgram(), "config", "config-helper", "--format=json"},
                                      kGcloudQueryDeadline},
                        "gcloud config config-helper");
  } catch (const GcloudError& e) {
    if (e.failure() == GcloudFailure::kInterrupted) throw;
    // gcloud makes the calls meanwhile, and says what fails.
    std::lock_guard lock(kept.mutex);
    kept.unusable_until = now + kFailedFor;
    return std::nullopt;
  }
  std::string why;
  std::optional<CloudApiAccess> access = ParseGcloudConfigHelper(printed, now, &why);
  std::lock_guard lock(kept.mutex);
  kept.access = access;
  if (!access) kept.unusable_until = now + kUnusableFor;
  return access;
}

void ForgetGcloudApiAccess() {
  Kept& kept = KeptAccess();
  std::lock_guard lock(kept.mutex);
  kept.access.reset();
  kept.unusable_until = {};
}

}  // namespace podrun
