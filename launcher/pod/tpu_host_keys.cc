// See tpu_host_keys.h.
#include "launcher/pod/tpu_host_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using nlohmann::json;

std::string StringField(const json& object, const char* name) {
  auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The host key types OpenSSH writes in known_hosts, exactly (a type is written into the file
// as it is: anything else, a newline or "@cert-authority" included, could add lines to it).
bool IsKeyType(std::string_view type) {
  static constexpr std::string_view kTypes[] = {
      "ssh-ed25519",
      "ecdsa-sha2-nistp256",
      "ecdsa-sha2-nistp384",
      "ecdsa-sha2-nistp521",
      "ssh-rsa",
      "sk-ssh-ed25519@openssh.com",
      "sk-ecdsa-sha2-nistp256@openssh.com",
  };
  return std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes);
}

int Base64Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Standard base64 with its padding (only at the end), decoded; nullopt when it is not.
std::optional<std::string> DecodeBase64(std::string_view s) {
  if (s.empty() || s.size() % 4 != 0 || s.size() > kMaxHostKeyBase64) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && s[s.size() - 1 - pad] == '=') ++pad;
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < s.size() - pad; ++i) {
    const int v = Base64Value(s[i]);
    if (v < 0) return std::nullopt;  // whitespace, controls, '=' inside, anything else
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      out += static_cast<char>(bits >> 16);
      out += static_cast<char>(bits >> 8);
      out += static_cast<char>(bits);
      bits = 0;
      count = 0;
    }
  }
  if (count == 2) out += static_cast<char>(bits >> 4);
  if (count == 3) {
    out += static_cast<char>(bits >> 10);
    out += static_cast<char>(bits >> 2);
  }
  return out;
}

// True when `base64` is a key of type `type` in SSH's wire format: base64 that decodes to a
// blob whose first string is the type itself (as every OpenSSH public key does).
bool IsKeyOfType(std::string_view type, std::string_view base64) {
  const std::optional<std::string> blob = DecodeBase64(base64);
  if (!blob || blob->size() < 4 + type.size()) return false;
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>((*blob)[i]));
  };
  const uint32_t length = byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
  return length == type.size() && std::string_view(*blob).substr(4, length) == type;
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
  if (!IsPublishedHostKey(type, value)) return;
  std::vector<PublishedHostKey>& list = keys[worker];
  PublishedHostKey key{type, value};
  if (list.size() < kMaxHostKeysPerWorker &&
      std::find(list.begin(), list.end(), key) == list.end()) {
    list.push_back(key);
  }
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

bool IsPublishedHostKey(std::string_view type, std::string_view base64) {
  return IsKeyType(type) && IsKeyOfType(type, base64);
}

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
