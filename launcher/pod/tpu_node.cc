// Reading gcloud's Node JSON (see tpu_node.h).
#include "launcher/pod/tpu_node.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "launcher/base/error.h"

namespace podrun {

TpuNode ParseTpuNode(std::string_view json, const std::string& what) {
  auto fail = [&](const std::string& why) {
    return Error(ExitCode::kUnreachable, fmt::format("{}: gcloud's answer {}", what, why));
  };
  nlohmann::json node;
  try {
    node = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    throw fail(fmt::format("is not JSON ({})", e.what()));
  }
  if (!node.is_object()) throw fail("is not a TPU node");
  TpuNode out;
  const std::string full = node.value("name", "");
  out.name = full.substr(full.rfind('/') + 1);
  out.state = node.value("state", "");
  out.accelerator_type = node.value("acceleratorType", "");
  const auto endpoints = node.find("networkEndpoints");
  if (endpoints == node.end() || !endpoints->is_array() || endpoints->empty()) {
    if (out.state != "READY") return out;  // being created, stopped, ...: the caller says so
    throw fail("has no networkEndpoints for a READY node");
  }
  for (size_t i = 0; i < endpoints->size(); ++i) {
    const auto& e = (*endpoints)[i];
    TpuEndpoint endpoint;
    if (!e.is_object() || !e.contains("ipAddress") || !e["ipAddress"].is_string() ||
        e["ipAddress"].get<std::string>().empty()) {
      throw fail(fmt::format("has no ipAddress for worker {}", i));
    }
    endpoint.internal_ip = e["ipAddress"].get<std::string>();
    if (auto access = e.find("accessConfig"); access != e.end() && access->is_object()) {
      if (auto ip = access->find("externalIp");
          ip != access->end() && ip->is_string() && !ip->get<std::string>().empty()) {
        endpoint.external_ip = ip->get<std::string>();
      }
    }
    out.endpoints.push_back(std::move(endpoint));
  }
  return out;
}

}  // namespace podrun
