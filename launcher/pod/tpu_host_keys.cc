// See tpu_host_keys.h.
#include "launcher/pod/tpu_host_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The key types OpenSSH writes in known_hosts.
bool IsKeyType(const std::string& type) {
  return type.starts_with("ssh-") || type.starts_with("ecdsa-sha2-") ||
         type.starts_with("sk-ssh-") || type.starts_with("sk-ecdsa-");
}

bool IsBase64(const std::string& s) {
  return !s.empty() && s.size() < 16384 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '/' || c == '=';
  });
}

// "hostkeys/" or "hostkeys/ssh-ed25519" as a query path; "hostkeys" as a namespace.
bool InHostKeys(const std::string& ns_or_path) {
  return ns_or_path == "hostkeys" || ns_or_path.starts_with("hostkeys/");
}

int WorkerIdOf(const json& item, const std::string& what) {
  auto it = item.find("workerId");                    // the API's
  if (it == item.end()) it = item.find("worker_id");  // gcloud 528's
  if (it == item.end()) return 0;                     // a single-worker node may leave it out
  try {
    if (it->is_number_integer()) return it->get<int>();
    if (it->is_string() && !it->get<std::string>().empty()) {
      size_t used = 0;
      const int id = std::stoi(it->get<std::string>(), &used);
      if (used == it->get<std::string>().size() && id >= 0) return id;
    }
  } catch (const std::exception&) {
  }
  throw Error(ExitCode::kUnreachable,
              fmt::format("{}: guest attributes: bad workerId {}", what, it->dump()));
}

void Add(TpuHostKeys& keys, int worker, const std::string& type, const std::string& value) {
  if (!IsKeyType(type) || !IsBase64(value)) return;
  std::vector<PublishedHostKey>& list = keys[worker];
  PublishedHostKey key{type, value};
  if (std::find(list.begin(), list.end(), key) == list.end()) list.push_back(key);
}

void AddAttribute(TpuHostKeys& keys, const json& item, const std::string& what) {
  if (!item.is_object()) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: guest attributes: expected objects, got {}", what, item.dump()));
  }
  const int worker = WorkerIdOf(item, what);
  auto value = item.find("queryValue");
  if (value != item.end() && value->is_object()) {  // the API's shape
    auto items = value->find("items");
    if (items == value->end() || !items->is_array()) return;
    for (const json& kv : *items) {
      if (!kv.is_object()) continue;
      const std::string ns = StringField(kv, "namespace");
      if (!InHostKeys(ns) && !(ns.empty() && InHostKeys(StringField(item, "queryPath")))) continue;
      Add(keys, worker, StringField(kv, "key"), StringField(kv, "value"));
    }
    return;
  }
  // gcloud's flattened items.
  const std::string ns = StringField(item, "namespace");
  const std::string path = StringField(item, "queryPath");
  if (!InHostKeys(ns) && !InHostKeys(path)) return;
  Add(keys, worker, StringField(item, "key"), StringField(item, "value"));
}

}  // namespace

TpuHostKeys ParseTpuHostKeys(std::string_view text, const std::string& what) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: guest attributes are not JSON: {}", what, e.what()));
  }
  if (doc.is_object() && doc.contains("guestAttributes")) doc = doc["guestAttributes"];
  if (doc.is_null() || (doc.is_object() && doc.empty())) return {};
  if (!doc.is_array()) {
    throw Error(ExitCode::kUnreachable, fmt::format("{}: guest attributes: expected a list, got {}",
                                                    what, doc.dump().substr(0, 200)));
  }
  TpuHostKeys keys;
  for (const json& item : doc) AddAttribute(keys, item, what);
  return keys;
}

}  // namespace podrun
