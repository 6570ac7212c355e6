// Reading gcloud's Node JSON (see tpu_node.h).
#include "launcher/pod/tpu_node.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "launcher/base/error.h"
#include "launcher/pod/host_list.h"

namespace podrun {

namespace {

// "WHAT: gcloud's answer WHY", as Error(kUnreachable).
Error AnswerError(const std::string& what, const std::string& why) {
  return Error(ExitCode::kUnreachable, fmt::format("{}: gcloud's answer {}", what, why));
}

// gcloud's answer as a JSON object, else AnswerError ("is not JSON", "is not a KIND").
nlohmann::json ParseObject(std::string_view json, const std::string& what, const char* kind) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw AnswerError(what, fmt::format("is not JSON ({})", e.what()));
  }
  if (!object.is_object()) throw AnswerError(what, fmt::format("is not a {}", kind));
  return object;
}

}  // namespace

TpuNode ParseTpuNode(std::string_view json, const std::string& what) {
  auto fail = [&](const std::string& why) { return AnswerError(what, why); };
  const nlohmann::json node = ParseObject(json, what, "TPU node");
  // A field that is there must be a string; one that is missing reads as "".
  auto text = [&](const nlohmann::json& object, const char* key) -> std::string {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "";
    if (!it->is_string()) throw fail(fmt::format("has a {} that is not a string", key));
    return it->get<std::string>();
  };
  // Addresses reach ssh's ProxyCommand, exportfs and sshfs: the same rules as --hosts.
  auto address = [&](const nlohmann::json& object, const char* key, size_t worker) {
    std::string value = text(object, key);
    if (value.empty()) return value;
    try {
      ValidateHost(value, value);
    } catch (const Error& e) {
      throw fail(fmt::format("has a bad {} for worker {} ({})", key, worker, e.what()));
    }
    return value;
  };
  TpuNode out;
  const std::string full = text(node, "name");
  out.name = full.substr(full.rfind('/') + 1);
  if (full.rfind("projects/", 0) == 0) out.project = full.substr(9, full.find('/', 9) - 9);
  out.state = text(node, "state");
  out.accelerator_type = text(node, "acceleratorType");
  out.runtime_version = text(node, "runtimeVersion");
  const std::string queued = text(node, "queuedResource");
  out.queued_resource = queued.substr(queued.rfind('/') + 1);
  const auto endpoints = node.find("networkEndpoints");
  if (endpoints == node.end() || !endpoints->is_array() || endpoints->empty()) {
    if (out.state != "READY") return out;  // being created, stopped, ...: the caller says so
    throw fail("has no networkEndpoints for a READY node");
  }
  for (size_t i = 0; i < endpoints->size(); ++i) {
    const auto& e = (*endpoints)[i];
    TpuEndpoint endpoint;
    if (!e.is_object()) throw fail(fmt::format("has no ipAddress for worker {}", i));
    endpoint.internal_ip = address(e, "ipAddress", i);
    if (endpoint.internal_ip.empty()) throw fail(fmt::format("has no ipAddress for worker {}", i));
    if (auto access = e.find("accessConfig"); access != e.end() && access->is_object()) {
      if (std::string ip = address(*access, "externalIp", i); !ip.empty()) {
        endpoint.external_ip = std::move(ip);
      }
    }
    out.endpoints.push_back(std::move(endpoint));
  }
  return out;
}

QueuedResource ParseQueuedResource(std::string_view json, const std::string& what) {
  const nlohmann::json qr = ParseObject(json, what, "queued resource");
  QueuedResource out;
  if (auto name = qr.find("name"); name != qr.end() && name->is_string()) {
    const std::string full = name->get<std::string>();
    out.name = full.substr(full.rfind('/') + 1);
  }
  // {"state": {"state": "ACTIVE", ...}}
  if (auto state = qr.find("state"); state != qr.end() && state->is_object()) {
    if (auto inner = state->find("state"); inner != state->end() && inner->is_string()) {
      out.state = inner->get<std::string>();
    }
  }
  if (out.state.empty()) throw AnswerError(what, "has no state");
  return out;
}

bool IsNodeGone(const std::string& state) { return state == "PREEMPTED" || state == "TERMINATED"; }

bool NeedsRecreation(const std::optional<TpuNode>& node, const std::optional<QueuedResource>& qr) {
  return (node && IsNodeGone(node->state)) ||
         (qr && (qr->state == "SUSPENDED" || qr->state == "FAILED"));
}

}  // namespace podrun
