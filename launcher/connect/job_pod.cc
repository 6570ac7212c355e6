// Storing and restoring a job's pod.
#include "launcher/connect/job_pod.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "launcher/base/error.h"
#include "launcher/persist/holder_client.h"

namespace podrun {

std::vector<JobHost> JobHostsOf(const Pod& pod, const std::vector<std::string>& addresses) {
  std::vector<JobHost> hosts;
  for (const PodWorker& w : pod.workers) {
    JobHost h;
    h.index = w.index;
    h.user = w.host.user.value_or("");
    h.host = w.host.host;
    h.port = w.host.port.value_or(0);
    h.address = static_cast<size_t>(w.index) < addresses.size() ? addresses[w.index] : "";
    hosts.push_back(h);
  }
  return hosts;
}

namespace {

// The pod's slices, as the record keeps them: "sources", one list in slice order of
// {"kind": "tpu"|"mig", "name", "zone", "project"?}. A record of an older podrun has "tpu_nodes"
// or "migs" instead (read by SourcesOfRecord); writing replaces them.
void PutSlices(const Pod& pod, nlohmann::json& j) {
  j.erase("tpu_nodes");
  j.erase("migs");
  j.erase("sources");
  for (const PodSourceRef& ref : pod.sources) {
    nlohmann::json source = {
        {"kind", PodSourceKindName(ref.kind)}, {"name", ref.query.name}, {"zone", ref.query.zone}};
    if (ref.query.project) source["project"] = *ref.query.project;
    j["sources"].push_back(source);
  }
}

// The record's sources, from "sources" or an older record's "tpu_nodes"/"migs". Throws
// nlohmann::json::exception on a malformed entry, UsageError naming `job_id` on an unknown kind.
std::vector<PodSourceRef> SourcesOfRecord(const nlohmann::json& j, const std::string& job_id) {
  std::vector<PodSourceRef> out;
  auto read = [&](const nlohmann::json& source, PodSourceKind kind) {
    SliceRef q{source.at("name").get<std::string>(), source.at("zone").get<std::string>(), {}};
    if (source.contains("project")) q.project = source["project"].get<std::string>();
    out.push_back({kind, std::move(q)});
  };
  if (j.contains("sources")) {
    for (const nlohmann::json& source : j.at("sources")) {
      const std::string kind = source.at("kind").get<std::string>();
      if (kind != "tpu" && kind != "mig") {
        throw UsageError(
            fmt::format("job {}: unreadable pod record: a source of kind '{}'", job_id, kind));
      }
      read(source, kind == "mig" ? PodSourceKind::kMig : PodSourceKind::kTpuNode);
    }
    return out;
  }
  for (const auto& [key, kind] :
       {std::pair{"tpu_nodes", PodSourceKind::kTpuNode}, std::pair{"migs", PodSourceKind::kMig}}) {
    if (!j.contains(key)) continue;
    for (const nlohmann::json& source : j.at(key)) read(source, kind);
  }
  return out;
}

}  // namespace

std::string WithPodSlices(const std::string& options_json, const Pod& pod) {
  nlohmann::json j = nlohmann::json::parse(options_json, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) j = nlohmann::json::object();
  PutSlices(pod, j);
  return j.dump();
}

std::vector<std::string> JobZones(const JobRecord& job) {
  const nlohmann::json j = nlohmann::json::parse(job.options_json, nullptr, false);
  std::vector<std::string> zones;
  if (!j.is_object()) return zones;
  std::vector<PodSourceRef> sources;
  try {
    sources = SourcesOfRecord(j, job.id);
  } catch (const std::exception&) {
    return zones;  // an unreadable record has no zone to show (status names the record's fault)
  }
  for (const PodSourceRef& ref : sources) {
    if (std::find(zones.begin(), zones.end(), ref.query.zone) == zones.end()) {
      zones.push_back(ref.query.zone);
    }
  }
  return zones;
}

std::string PodOptionsJson(const Pod& pod, const std::filesystem::path& local_root) {
  nlohmann::json j;
  j["local"] = pod.local;
  j["local_root"] = local_root.string();
  j["fanout"] = pod.fanout;
  if (pod.ssh.default_user) j["user"] = *pod.ssh.default_user;
  if (pod.ssh.default_port) j["port"] = *pod.ssh.default_port;
  if (pod.ssh.identity) j["identity"] = *pod.ssh.identity;
  if (pod.ssh.ssh_config) j["ssh_config"] = *pod.ssh.ssh_config;
  if (pod.ssh.jump) j["jump"] = JumpChainToString(*pod.ssh.jump);
  j["known_hosts"] = pod.ssh.known_hosts;
  j["strict_host_keys"] = pod.ssh.strict_host_keys;
  j["connect_timeout_ms"] = pod.ssh.connect_timeout.count();
  j["cloud_tpu"] = pod.cloud_tpu;
  j["internal_ip"] = pod.internal_ip;
  PutSlices(pod, j);
  if (pod.slices > 1) {
    std::vector<int> slices;
    for (const PodWorker& w : pod.workers) slices.push_back(w.slice);
    j["slices"] = slices;
  }
  return j.dump();
}

Pod PodOfJob(const JobRecord& job, std::filesystem::path* local_root) {
  Pod pod;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(job.options_json);
    pod.local = j.value("local", 0);
    *local_root = j.value("local_root", std::string());
    pod.fanout = j.value("fanout", 64);
    if (j.contains("user")) pod.ssh.default_user = j["user"].get<std::string>();
    if (j.contains("port")) pod.ssh.default_port = j["port"].get<int>();
    if (j.contains("identity")) pod.ssh.identity = j["identity"].get<std::string>();
    if (j.contains("ssh_config")) pod.ssh.ssh_config = j["ssh_config"].get<std::string>();
    if (j.contains("jump")) pod.ssh.jump = ParseJumpChain(j["jump"].get<std::string>());
    pod.ssh.known_hosts = j.value("known_hosts", std::string());
    pod.ssh.strict_host_keys = j.value("strict_host_keys", false);
    pod.ssh.connect_timeout = std::chrono::milliseconds(j.value("connect_timeout_ms", 10000));
    pod.cloud_tpu = j.value("cloud_tpu", false);
    pod.internal_ip = j.value("internal_ip", false);
    pod.sources = SourcesOfRecord(j, job.id);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(fmt::format("job {}: unreadable pod record: {}", job.id, e.what()));
  }
  for (const JobHost& h : job.hosts) {
    PodWorker w;
    w.index = h.index;
    if (!h.user.empty()) w.host.user = h.user;
    w.host.host = h.host;
    if (h.port > 0) w.host.port = h.port;
    if (pod.cloud_tpu) w.peer_address = h.address;  // a TPU VM's internal IP
    pod.workers.push_back(w);
    pod.selected.push_back(h.index);
  }
  if (j.contains("slices") && j["slices"].is_array() && j["slices"].size() == pod.workers.size()) {
    int slices = 1;
    for (size_t i = 0; i < pod.workers.size(); ++i) {
      pod.workers[i].slice = j["slices"][i].get<int>();
      slices = std::max(slices, pod.workers[i].slice + 1);
    }
    pod.slices = slices;
  }
  pod.description = job.pod;
  pod.persist = pod.local == 0 && PersistWanted(false);  // PODRUN_PERSIST=0 turns it off
  return pod;
}

}  // namespace podrun
