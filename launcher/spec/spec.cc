// Parses the job spec with yaml-cpp and validates every key, so that a mistake is reported with
// its file, line and column before anything starts anywhere.
#include "launcher/job/spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

#include "launcher/error.h"
#include "launcher/job/yaml_reader.h"
#include "launcher/ssh/jump_spec.h"
#include "proto/edit_distance.h"

namespace podrun {
namespace {

constexpr std::string_view kTopKeys[] = {
    "name",
    "pod",
    "workdir",
    "sync",
    "env",
    "secret_env",
    "mounts",
    "setup",
    "setup_inputs",
    "run",
    "on_failure",
    "restarts",
    "grace_seconds",
    "stall_seconds",
    "coordinator_port",
    "megascale_port",
    "free_accelerators",
};
constexpr std::string_view kPodKeys[] = {
    "hosts",       "tpu",
    "zone",        "project",
    "internal_ip", "local",
    "workers",     "user",
    "port",        "identity",
    "ssh_config",  "known_hosts",
    "jump",        "strict_host_keys",
    "fanout",      "connect_timeout",
};

bool IsValidWorkerList(const std::string& list) {
  if (Trim(list).empty()) return false;
  for (const std::string& item : SplitCommas(list)) {
    size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    if (dash == std::string::npos) {
      if (!ParseInt(item, &first) || first < 0 || item[0] == '+') return false;
    } else {
      std::string a = item.substr(0, dash);
      std::string b = item.substr(dash + 1);
      if (a.empty() || b.empty() || a[0] == '+' || b[0] == '+' || !ParseInt(a, &first) ||
          !ParseInt(b, &last) || first < 0 || last < first) {
        return false;
      }
    }
  }
  return true;
}

// Light check of `[user@]host[:port]`; the pod resolver interprets it.
std::string HostEntryProblem(const std::string& entry) {
  if (entry.empty()) return "empty host entry";
  if (entry.find_first_of(" \t") != std::string::npos) return "a host entry has no spaces";
  std::string rest = entry;
  size_t at = rest.rfind('@');
  if (at != std::string::npos) {
    if (at == 0) return "empty user before '@'";
    rest = rest.substr(at + 1);
  }
  if (rest.empty()) return "empty host";
  std::string port;
  if (rest.front() == '[') {  // [v6 address]:port
    size_t close = rest.find(']');
    if (close == std::string::npos) return "unclosed '['";
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':') return "expected ':port' after ']'";
      port = rest.substr(close + 2);
      if (port.empty()) return "empty port";
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    size_t colon = rest.find(':');
    if (colon == 0) return "empty host";
    port = rest.substr(colon + 1);
    if (port.empty()) return "empty port";
  }
  int number = 0;
  if (!port.empty() && (!ParseInt(port, &number) || number < 1 || number > 65535)) {
    return "bad port '" + port + "'";
  }
  return "";
}

std::string SanitizedStem(const std::string& file_name) {
  std::string stem = std::filesystem::path(file_name).stem().string();
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '-';
  }
  while (!stem.empty() && !std::isalnum(static_cast<unsigned char>(stem.front()))) {
    stem.erase(0, 1);
  }
  if (stem.size() > 64) stem.resize(64);
  return stem.empty() ? "job" : stem;
}

// The spec's schema: every key, its type and its values, read through a YamlReader.
class Parser : private YamlReader {
 public:
  Parser(const std::string& text, const std::string& file_name) : YamlReader(text, file_name) {}

  JobSpec Parse() {
    YAML::Node root;
    try {
      root = YAML::Load(text());
    } catch (const YAML::ParserException& e) {
      Fail(e.mark, e.msg);
    }
    JobSpec spec;
    spec.text = text();
    spec.path = file();
    spec.name = SanitizedStem(file());
    if (root.IsNull()) Fail(YAML::Mark(), "missing required key 'run'");
    if (!root.IsMap()) Fail(root.Mark(), "a spec is a mapping of keys (name:, pod:, run:, ...)");

    std::set<std::string> seen;
    YAML::Mark sync_mark;
    for (auto it = root.begin(); it != root.end(); ++it) {
      const YAML::Node key = it->first;
      const YAML::Node value = it->second;
      std::string k = KeyName(key, &seen);
      if (k == "name") {
        spec.name = String(key, value);
        if (!IsValidJobName(spec.name)) {
          Fail(At(key, value),
               "bad name '" + spec.name + "' (letters, digits, '.', '_', '-'; at most 64)");
        }
      } else if (k == "pod") {
        ParsePod(key, value, &spec.pod);
      } else if (k == "workdir") {
        if (!value.IsNull()) spec.workdir = NonEmptyString(key, value);
      } else if (k == "sync") {
        spec.sync = NonEmptyString(key, value);
        sync_mark = At(key, value);
      } else if (k == "env") {
        ParseEnv(key, value, &spec.env);
      } else if (k == "secret_env") {
        ParseSecrets(key, value, &spec.secret_env);
      } else if (k == "mounts") {
        ParseMounts(key, value, &spec.mounts);
      } else if (k == "setup") {
        if (!value.IsNull()) spec.setup = String(key, value);
      } else if (k == "setup_inputs") {
        for (auto& [input, mark] : List(key, value, true)) {
          if (input.empty() || input.front() == '/' || input.find("..") != std::string::npos) {
            Fail(mark, "'" + input + "': a path relative to the synced directory (or the spec's)");
          }
          spec.setup_inputs.push_back(input);
        }
      } else if (k == "run") {
        spec.run = value.IsNull() ? "" : String(key, value);
        if (Trim(spec.run).empty()) Fail(At(key, value), "'run' must not be empty");
      } else if (k == "on_failure") {
        std::string v = String(key, value);
        if (v == "stop_all") {
          spec.on_failure = OnFailure::kStopAll;
        } else if (v == "continue") {
          spec.on_failure = OnFailure::kContinue;
        } else {
          Fail(At(key, value), "bad on_failure '" + v + "' (expected stop_all or continue)");
        }
      } else if (k == "restarts") {
        spec.restarts = Int(key, value, 0, 1000000);
      } else if (k == "grace_seconds") {
        spec.grace_seconds = Int(key, value, 1, 1000000);
      } else if (k == "stall_seconds") {
        spec.stall_seconds = Int(key, value, 0, 100000000);
      } else if (k == "coordinator_port") {
        spec.coordinator_port = Int(key, value, 1, 65535);
      } else if (k == "megascale_port") {
        spec.megascale_port = Int(key, value, 1, 65535);
      } else if (k == "free_accelerators") {
        spec.free_accelerators = Bool(key, value);
      } else if (std::find(std::begin(kPodKeys), std::end(kPodKeys), k) != std::end(kPodKeys)) {
        Fail(key.Mark(), "unknown key '" + k + "' (pod options go under 'pod:')");
      } else {
        UnknownKey(key, k, kTopKeys);
      }
    }
    if (!seen.count("run")) Fail(root.Mark(), "missing required key 'run'");
    if (!spec.sync.empty()) {
      std::error_code ec;
      const std::filesystem::path dir = SyncDirectory(spec);
      if (!std::filesystem::is_directory(dir, ec)) {
        Fail(sync_mark,
             "sync: " + dir.string() +
                 (std::filesystem::exists(dir, ec) ? " is not a directory" : " does not exist") +
                 " (a local directory, relative to the spec's)");
      }
    }
    for (const std::string& secret : spec.secret_env) {
      if (spec.env.count(secret)) {
        Fail(FindKeyMark(root, "secret_env"), "'" + secret + "' is in both env and secret_env");
      }
    }
    return spec;
  }

 private:
  void ParsePod(const YAML::Node& key, const YAML::Node& value, PodSettings* pod) const {
    if (value.IsNull()) return;
    if (!value.IsMap()) WrongType(key, value, "a mapping");
    std::set<std::string> seen;
    std::string kind;  // the key that chose the kind of pod: hosts, tpu or local
    for (auto it = value.begin(); it != value.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      std::string name = KeyName(k, &seen);
      if (name == "hosts" || name == "tpu" || name == "local") {
        if (!kind.empty()) {
          Fail(k.Mark(),
               "'pod' has both '" + kind + "' and '" + name + "' (give one of hosts, tpu, local)");
        }
        kind = name;
      }
      if (name == "hosts") {
        std::vector<std::string> hosts;
        auto entries = List(k, v, true);
        for (auto& [entry, mark] : entries) {
          if (entry.size() > 1 && entry[0] == '@' && entries.size() == 1) {  // @FILE
            hosts.push_back(entry);
            continue;
          }
          std::string problem = HostEntryProblem(entry);
          if (!problem.empty()) Fail(mark, "bad host '" + entry + "': " + problem);
          hosts.push_back(entry);
        }
        if (hosts.empty()) Fail(At(k, v), "'hosts' must list at least one host");
        pod->hosts = hosts;
      } else if (name == "tpu") {
        pod->tpu = NonEmptyString(k, v);
      } else if (name == "zone") {
        pod->zone = NonEmptyString(k, v);
      } else if (name == "project") {
        pod->project = NonEmptyString(k, v);
      } else if (name == "internal_ip") {
        pod->internal_ip = Bool(k, v);
      } else if (name == "local") {
        pod->local = Int(k, v, 1, 4096);
      } else if (name == "workers") {
        std::string list;
        if (v.IsSequence()) {
          for (auto& [entry, mark] : List(k, v, false)) list += (list.empty() ? "" : ",") + entry;
        } else {
          list = Scalar(k, v, "a worker list like 0,2-3");
        }
        if (!IsValidWorkerList(list)) {
          Fail(At(k, v), "bad worker list '" + list + "' (expected e.g. 0,2-3)");
        }
        pod->workers = list;
      } else if (name == "user") {
        pod->user = NonEmptyString(k, v);
      } else if (name == "port") {
        pod->port = Int(k, v, 1, 65535);
      } else if (name == "identity") {
        pod->identity = NonEmptyString(k, v);
      } else if (name == "ssh_config") {
        pod->ssh_config = NonEmptyString(k, v);
      } else if (name == "known_hosts") {
        pod->known_hosts = NonEmptyString(k, v);
      } else if (name == "jump") {
        std::string jump = NonEmptyString(k, v);
        try {
          ParseJumpChain(jump);
        } catch (const Error& e) {
          Fail(At(k, v), e.what());
        }
        pod->jump = jump;
      } else if (name == "strict_host_keys") {
        pod->strict_host_keys = Bool(k, v);
      } else if (name == "fanout") {
        pod->fanout = Int(k, v, 1, 1000000);
      } else if (name == "connect_timeout") {
        pod->connect_timeout = Int(k, v, 1, 1000000);
      } else {
        UnknownKey(k, name, kPodKeys);
      }
    }
  }

  void ParseEnv(const YAML::Node& key, const YAML::Node& value,
                std::map<std::string, std::string>* env) const {
    if (value.IsNull()) return;
    if (!value.IsMap()) WrongType(key, value, "a mapping");
    std::set<std::string> seen;
    for (auto it = value.begin(); it != value.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      std::string name = KeyName(k, &seen);
      if (!IsValidEnvName(name)) Fail(k.Mark(), "bad environment variable name '" + name + "'");
      if (name.rfind("PODRUN_", 0) == 0) {
        Fail(k.Mark(), "'" + name + "': PODRUN_ variables are set by podrun");
      }
      (*env)[name] = v.IsNull() ? "" : Scalar(k, v, "a string or number");
    }
  }

  void ParseSecrets(const YAML::Node& key, const YAML::Node& value,
                    std::vector<std::string>* secrets) const {
    for (auto& [name, mark] : List(key, value, true)) {
      if (!IsValidEnvName(name)) Fail(mark, "bad environment variable name '" + name + "'");
      if (name.rfind("PODRUN_", 0) == 0) {
        Fail(mark,
             "'" + name + "': PODRUN_ variables are set by podrun (name the secret otherwise)");
      }
      if (std::find(secrets->begin(), secrets->end(), name) != secrets->end()) {
        Fail(mark, "'" + name + "' is listed twice");
      }
      secrets->push_back(name);
    }
  }

  void ParseMounts(const YAML::Node& key, const YAML::Node& value,
                   std::vector<Mount>* mounts) const {
    if (value.IsNull()) return;
    if (!value.IsSequence()) WrongType(key, value, "a list of mounts");
    for (const YAML::Node& entry : value) {
      if (!entry.IsMap()) {
        Fail(entry.Mark(), "a mount is a mapping like {type: bind, source: /data, path: /mnt}");
      }
      mounts->push_back(ParseMount(entry));
      for (size_t i = 0; i + 1 < mounts->size(); ++i) {
        if ((*mounts)[i].path == mounts->back().path) {
          Fail(entry.Mark(), "mount path '" + mounts->back().path + "' is used twice");
        }
      }
    }
  }

  Mount ParseMount(const YAML::Node& entry) const {
    Mount mount;
    const YAML::Node type = entry["type"];
    if (!type) Fail(entry.Mark(), "mount without 'type' (nfs, gcsfuse, sshfs or bind)");
    std::string type_name = type.IsScalar() ? type.Scalar() : "";
    std::vector<std::string_view> required;
    if (type_name == "nfs") {
      mount.type = MountType::kNfs;
      required = {"server", "export", "path"};
    } else if (type_name == "gcsfuse") {
      mount.type = MountType::kGcsfuse;
      required = {"bucket", "path"};
    } else if (type_name == "sshfs" || type_name == "bind") {
      mount.type = type_name == "sshfs" ? MountType::kSshfs : MountType::kBind;
      required = {"source", "path"};
    } else {
      Fail(type.Mark(), "bad mount type '" + type_name + "' (nfs, gcsfuse, sshfs or bind)");
    }
    std::vector<std::string_view> allowed = required;
    allowed.push_back("type");
    allowed.push_back("options");
    constexpr std::string_view kAnyMountKey[] = {"server", "export", "bucket", "source"};

    std::set<std::string> seen;
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      std::string name = KeyName(k, &seen);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        if (std::find(std::begin(kAnyMountKey), std::end(kAnyMountKey), name) !=
            std::end(kAnyMountKey)) {
          Fail(k.Mark(), "'" + name + "' does not apply to a " + type_name + " mount");
        }
        UnknownKey(k, name, allowed);
      }
      if (name == "type") continue;
      if (name == "options") {
        if (v.IsSequence()) {
          std::string joined;
          for (auto& [option, mark] : List(k, v, false)) {
            joined += (joined.empty() ? "" : ",") + option;
          }
          mount.options = joined;
        } else if (!v.IsNull()) {
          mount.options = String(k, v);
        }
        continue;
      }
      std::string s = NonEmptyString(k, v);
      if (name == "server") mount.server = s;
      if (name == "export") mount.export_path = s;
      if (name == "bucket") mount.bucket = s;
      if (name == "source") mount.source = s;
      if (name == "path") {
        if (s[0] != '/' && s != "~" && s.rfind("~/", 0) != 0) {
          Fail(v.Mark(), "mount path '" + s + "' must be absolute (or start with ~/)");
        }
        mount.path = s;
      }
    }
    for (std::string_view name : required) {
      if (!seen.count(std::string(name))) {
        Fail(entry.Mark(), type_name + " mount without '" + std::string(name) + "'");
      }
    }
    return mount;
  }
};

}  // namespace

const char* MountTypeName(MountType type) {
  switch (type) {
    case MountType::kNfs:
      return "nfs";
    case MountType::kGcsfuse:
      return "gcsfuse";
    case MountType::kSshfs:
      return "sshfs";
    case MountType::kBind:
      return "bind";
  }
  return "?";
}

std::filesystem::path SyncDirectory(const JobSpec& spec) {
  if (spec.sync.empty()) return {};
  return (std::filesystem::path(spec.path).parent_path() / spec.sync).lexically_normal();
}

std::filesystem::path SetupInputsBase(const JobSpec& spec) {
  return spec.sync.empty() ? std::filesystem::path(spec.path).parent_path() : SyncDirectory(spec);
}

bool IsValidJobName(const std::string& name) {
  if (name.empty() || name.size() > 64 || !std::isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool IsValidEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

JobSpec ParseSpecText(const std::string& text, const std::string& file_name) {
  return Parser(text, file_name).Parse();
}

JobSpec ParseSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(path + ": cannot read the spec: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw UsageError(path + ": cannot read the spec");
  return ParseSpecText(text.str(), path);
}

}  // namespace podrun
