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
#include "proto/edit_distance.h"

namespace podrun {
namespace {

constexpr std::string_view kTopKeys[] = {
    "name",
    "pod",
    "workdir",
    "env",
    "secret_env",
    "mounts",
    "setup",
    "run",
    "on_failure",
    "restarts",
    "grace_seconds",
    "stall_seconds",
    "coordinator_port",
    "free_accelerators",
};
constexpr std::string_view kPodKeys[] = {
    "hosts",
    "tpu",
    "zone",
    "project",
    "internal_ip",
    "local",
    "workers",
    "user",
    "port",
    "identity",
    "ssh_config",
    "known_hosts",
    "strict_host_keys",
    "fanout",
    "connect_timeout",
};

bool ParseInt(const std::string& text, int* out) {
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, *out);
  return ec == std::errc() && ptr == end && begin != end;
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> SplitCommas(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) parts.push_back(Trim(part));
  if (!s.empty() && s.back() == ',') parts.push_back("");
  return parts;
}

// "0,2-3": comma-separated indexes or inclusive ranges.
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

class Parser {
 public:
  Parser(const std::string& text, const std::string& file_name) : text_(text), file_(file_name) {}

  JobSpec Parse() {
    YAML::Node root;
    try {
      root = YAML::Load(text_);
    } catch (const YAML::ParserException& e) {
      Fail(e.mark, e.msg);
    }
    JobSpec spec;
    spec.text = text_;
    spec.path = file_;
    spec.name = SanitizedStem(file_);
    if (root.IsNull()) Fail(YAML::Mark(), "missing required key 'run'");
    if (!root.IsMap()) Fail(root.Mark(), "a spec is a mapping of keys (name:, pod:, run:, ...)");

    std::set<std::string> seen;
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
      } else if (k == "env") {
        ParseEnv(key, value, &spec.env);
      } else if (k == "secret_env") {
        ParseSecrets(key, value, &spec.secret_env);
      } else if (k == "mounts") {
        ParseMounts(key, value, &spec.mounts);
      } else if (k == "setup") {
        if (!value.IsNull()) spec.setup = String(key, value);
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
      } else if (k == "free_accelerators") {
        spec.free_accelerators = Bool(key, value);
      } else if (std::find(std::begin(kPodKeys), std::end(kPodKeys), k) != std::end(kPodKeys)) {
        Fail(key.Mark(), "unknown key '" + k + "' (pod options go under 'pod:')");
      } else {
        UnknownKey(key, k, kTopKeys);
      }
    }
    if (!seen.count("run")) Fail(root.Mark(), "missing required key 'run'");
    for (const std::string& secret : spec.secret_env) {
      if (spec.env.count(secret)) {
        Fail(FindKeyMark(root, "secret_env"), "'" + secret + "' is in both env and secret_env");
      }
    }
    return spec;
  }

 private:
  [[noreturn]] void Fail(const YAML::Mark& mark, const std::string& message) const {
    if (mark.is_null() || mark.line < 0) {
      throw UsageError(file_ + ":1:1: " + message);
    }
    std::string out = file_ + ":" + std::to_string(mark.line + 1) + ":" +
                      std::to_string(mark.column + 1) + ": " + message;
    std::string line = SourceLine(mark.line);
    if (!line.empty() || mark.column == 0) {
      std::string caret;
      for (int i = 0; i < mark.column && i < static_cast<int>(line.size()); ++i) {
        caret += line[i] == '\t' ? '\t' : ' ';
      }
      out += "\n  " + line + "\n  " + caret + "^";
    }
    throw UsageError(out);
  }

  std::string SourceLine(int line_index) const {
    std::stringstream in(text_);
    std::string line;
    for (int i = 0; std::getline(in, line); ++i) {
      if (i == line_index) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return line;
      }
    }
    return "";
  }

  // The mark of a value, or of its key when the value is empty (an empty value's mark points
  // past the key's line).
  static YAML::Mark At(const YAML::Node& key, const YAML::Node& value) {
    return value.IsNull() ? key.Mark() : value.Mark();
  }

  static YAML::Mark FindKeyMark(const YAML::Node& map, const std::string& name) {
    for (auto it = map.begin(); it != map.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == name) return it->first.Mark();
    }
    return map.Mark();
  }

  std::string KeyName(const YAML::Node& key, std::set<std::string>* seen) const {
    if (!key.IsScalar()) Fail(key.Mark(), "a key must be a plain name");
    std::string name = key.Scalar();
    if (!seen->insert(name).second) Fail(key.Mark(), "duplicate key '" + name + "'");
    return name;
  }

  template <typename Range>
  [[noreturn]] void UnknownKey(const YAML::Node& key, const std::string& name,
                               const Range& known) const {
    std::string message = "unknown key '" + name + "'";
    std::string suggestion = Closest(name, known);
    if (!suggestion.empty()) message += " (did you mean '" + suggestion + "'?)";
    Fail(key.Mark(), message);
  }

  [[noreturn]] void WrongType(const YAML::Node& key, const YAML::Node& value,
                              const std::string& expected) const {
    std::string got = value.IsNull()       ? "nothing"
                      : value.IsScalar()   ? "'" + value.Scalar() + "'"
                      : value.IsSequence() ? "a list"
                      : value.IsMap()      ? "a mapping"
                                           : "something else";
    Fail(At(key, value), "'" + key.Scalar() + "': expected " + expected + ", got " + got);
  }

  std::string Scalar(const YAML::Node& key, const YAML::Node& value,
                     const std::string& expected) const {
    if (!value.IsScalar()) WrongType(key, value, expected);
    return value.Scalar();
  }

  std::string String(const YAML::Node& key, const YAML::Node& value) const {
    return Scalar(key, value, "a string");
  }

  std::string NonEmptyString(const YAML::Node& key, const YAML::Node& value) const {
    std::string s = String(key, value);
    if (Trim(s).empty()) Fail(At(key, value), "'" + key.Scalar() + "' must not be empty");
    return s;
  }

  int Int(const YAML::Node& key, const YAML::Node& value, int min, int max) const {
    std::string text = Scalar(key, value, "an integer");
    int number = 0;
    if (!ParseInt(text, &number)) {
      Fail(At(key, value), "'" + key.Scalar() + "': expected an integer, got '" + text + "'");
    }
    if (number < min || number > max) {
      std::string range = max >= 1000000 ? ">= " + std::to_string(min)
                                         : std::to_string(min) + ".." + std::to_string(max);
      Fail(At(key, value), "'" + key.Scalar() + "': " + text + " is out of range (" + range + ")");
    }
    return number;
  }

  bool Bool(const YAML::Node& key, const YAML::Node& value) const {
    std::string text = Scalar(key, value, "true or false");
    std::string l = Lower(text);
    if (l == "true" || l == "yes" || l == "on") return true;
    if (l == "false" || l == "no" || l == "off") return false;
    Fail(At(key, value), "'" + key.Scalar() + "': expected true or false, got '" + text + "'");
  }

  // A YAML list of scalars, or (when `allow_comma_string`) one comma-separated string.
  // Returns each entry with the mark that points at it.
  std::vector<std::pair<std::string, YAML::Mark>> List(const YAML::Node& key,
                                                       const YAML::Node& value,
                                                       bool allow_comma_string) const {
    std::vector<std::pair<std::string, YAML::Mark>> out;
    if (value.IsNull()) return out;
    if (value.IsScalar() && allow_comma_string) {
      for (const std::string& part : SplitCommas(value.Scalar())) {
        out.emplace_back(part, value.Mark());
      }
      return out;
    }
    if (!value.IsSequence()) WrongType(key, value, "a list");
    for (const YAML::Node& item : value) {
      if (!item.IsScalar()) {
        Fail(item.Mark(), "'" + key.Scalar() + "': each entry must be a string");
      }
      out.emplace_back(Trim(item.Scalar()), item.Mark());
    }
    return out;
  }

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

  const std::string& text_;
  const std::string& file_;
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
