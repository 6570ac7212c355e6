// See mount_request.h.
#include "launcher/spec/mount_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "launcher/base/error.h"

namespace podrun {
namespace {

// K for "workerK" (or "wK"); nullopt for any other host.
std::optional<int> WorkerIndex(const std::string& host) {
  for (const std::string prefix : {"worker", "w"}) {
    if (host.rfind(prefix, 0) != 0 || host.size() == prefix.size()) continue;
    const std::string digits = host.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 6) {
      continue;
    }
    return std::stoi(digits);
  }
  return std::nullopt;
}

int CheckedIndex(int k, const std::string& host, size_t pod_size) {
  if (k < 0 || static_cast<size_t>(k) >= pod_size) {
    throw UsageError(
        fmt::format("mounts: {} is not a worker of this pod ({} workers)", host, pod_size));
  }
  return k;
}

}  // namespace

AgentMountRequest MountRequestFor(const std::vector<Mount>& mounts, int worker,
                                  const std::vector<std::string>& addresses) {
  AgentMountRequest request;
  request.worker_id = static_cast<uint32_t>(worker);
  request.peer_addresses = addresses;
  for (const Mount& m : mounts) {
    AgentMountRequest::Entry e;
    e.type = MountTypeName(m.type);
    e.export_path = m.export_path;
    e.bucket = m.bucket;
    e.source = m.source;
    e.path = m.path;
    e.options = m.options.value_or("");
    if (m.type == MountType::kNfs) {
      if (auto k = WorkerIndex(m.server)) {
        e.server_worker = CheckedIndex(*k, m.server, addresses.size());
        e.server = addresses[static_cast<size_t>(*k)];
      } else {
        e.server = m.server;
      }
    }
    if (m.type == MountType::kSshfs) {
      const size_t colon = m.source.find(':');
      if (colon != std::string::npos) {
        if (auto k = WorkerIndex(m.source.substr(0, colon))) {
          CheckedIndex(*k, m.source.substr(0, colon), addresses.size());
          e.source = addresses[static_cast<size_t>(*k)] + m.source.substr(colon);
        }
      }
    }
    request.mounts.push_back(std::move(e));
  }
  return request;
}

std::vector<int> NfsServers(const std::vector<Mount>& mounts, size_t pod_size) {
  std::vector<int> servers;
  for (const Mount& m : mounts) {
    if (m.type != MountType::kNfs) continue;
    if (auto k = WorkerIndex(m.server)) {
      CheckedIndex(*k, m.server, pod_size);
      if (std::find(servers.begin(), servers.end(), *k) == servers.end()) servers.push_back(*k);
    }
  }
  return servers;
}

}  // namespace podrun
