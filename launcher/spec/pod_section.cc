// See pod_section.h: one table of the `pod:` keys, each with the reader of its value.
#include "launcher/spec/pod_section.h"

#include <algorithm>
#include <set>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/ssh/jump_spec.h"

namespace podrun {
namespace {

using Node = YAML::Node;

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

void ReadHosts(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  std::vector<std::string> hosts;
  auto entries = yaml.List(k, v, true);
  for (auto& [entry, mark] : entries) {
    if (entry.size() > 1 && entry[0] == '@' && entries.size() == 1) {  // @FILE
      hosts.push_back(entry);
      continue;
    }
    std::string problem = HostEntryProblem(entry);
    if (!problem.empty()) yaml.Fail(mark, "bad host '" + entry + "': " + problem);
    hosts.push_back(entry);
  }
  if (hosts.empty()) yaml.Fail(YamlReader::At(k, v), "'hosts' must list at least one host");
  pod->hosts = hosts;
}

void ReadWorkers(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  std::string list;
  if (v.IsSequence()) {
    for (auto& [entry, mark] : yaml.List(k, v, false)) list += (list.empty() ? "" : ",") + entry;
  } else {
    list = yaml.Scalar(k, v, "a worker list like 0,2-3");
  }
  if (!IsValidWorkerList(list)) {
    yaml.Fail(YamlReader::At(k, v), "bad worker list '" + list + "' (expected e.g. 0,2-3)");
  }
  pod->workers = list;
}

void ReadJump(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  std::string jump = yaml.NonEmptyString(k, v);
  try {
    ParseJumpChain(jump);
  } catch (const Error& e) {
    yaml.Fail(YamlReader::At(k, v), e.what());
  }
  pod->jump = jump;
}

// tpu (a node, or several comma-separated: one pod of several slices), zone and project:
// checked as the API would (pod/tpu_names.h) before they can reach gcloud or a cache path.
void ReadTpu(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  const std::string list = yaml.NonEmptyString(k, v);
  for (const std::string& name : SplitTpuNames(list)) {
    if (std::string problem = TpuNodeNameProblem(name); !problem.empty()) {
      yaml.Fail(YamlReader::At(k, v), "bad tpu name '" + name + "': " + problem);
    }
  }
  pod->tpu = list;
}

// mig (a managed instance group of TPU VMs, or several comma-separated): checked as a tpu name.
void ReadMig(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  const std::string list = yaml.NonEmptyString(k, v);
  for (const std::string& name : SplitTpuNames(list)) {
    if (std::string problem = TpuNodeNameProblem(name); !problem.empty()) {
      yaml.Fail(YamlReader::At(k, v), "bad mig name '" + name + "': " + problem);
    }
  }
  pod->mig = list;
}

void ReadZone(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  const std::string zone = yaml.NonEmptyString(k, v);
  if (std::string problem = ZoneNameProblem(zone); !problem.empty()) {
    yaml.Fail(YamlReader::At(k, v), "bad zone '" + zone + "': " + problem);
  }
  pod->zone = zone;
}

void ReadProject(const YamlReader& yaml, const Node& k, const Node& v, PodSettings* pod) {
  const std::string project = yaml.NonEmptyString(k, v);
  if (std::string problem = ProjectIdProblem(project); !problem.empty()) {
    yaml.Fail(YamlReader::At(k, v), "bad project '" + project + "': " + problem);
  }
  pod->project = project;
}

// fallback_zones: a list of zones (or "a,b"), each a name the API allows, none twice.
void ReadFallbackZones(const YamlReader& yaml, const Node& k, const Node& v, TpuCreate* create) {
  std::vector<std::string> zones;
  for (const auto& [zone, mark] : yaml.List(k, v, /*allow_comma_string=*/true)) {
    if (std::string problem = ZoneNameProblem(zone); !problem.empty()) {
      yaml.Fail(mark, "bad zone '" + zone + "' in fallback_zones: " + problem);
    }
    if (std::find(zones.begin(), zones.end(), zone) != zones.end()) {
      yaml.Fail(mark, "zone '" + zone + "' is twice in fallback_zones");
    }
    zones.push_back(zone);
  }
  create->fallback_zones = std::move(zones);
}

// `create:` (tpu_create.h): every key of it; the whole is checked once the kind of pod is known.
constexpr KeyReader<TpuCreate> kCreateKeys[] = {
    {"accelerator_type", ReadNonEmptyStringField<&TpuCreate::accelerator_type>},
    {"version", ReadNonEmptyStringField<&TpuCreate::version>},
    {"spot", ReadBoolField<&TpuCreate::spot>},
    {"preemptible", ReadBoolField<&TpuCreate::preemptible>},
    {"queued", ReadBoolField<&TpuCreate::queued>},
    {"valid_until", ReadNonEmptyStringField<&TpuCreate::valid_until>},
    {"capacity_wait", ReadNonEmptyStringField<&TpuCreate::capacity_wait>},
    {"fallback_zones", ReadFallbackZones},
    {"machine_type", ReadNonEmptyStringField<&TpuCreate::machine_type>},
    {"topology", ReadNonEmptyStringField<&TpuCreate::topology>},
    {"image_family", ReadNonEmptyStringField<&TpuCreate::image_family>},
    {"image_project", ReadNonEmptyStringField<&TpuCreate::image_project>},
    {"provisioning", ReadNonEmptyStringField<&TpuCreate::provisioning>},
    {"max_run_duration", ReadNonEmptyStringField<&TpuCreate::max_run_duration>},
};

void ReadCreate(const YamlReader& yaml, const Node& key, const Node& value, PodSettings* pod) {
  if (!value.IsMap()) yaml.WrongType(key, value, "a mapping (accelerator_type, version, ...)");
  TpuCreate create;
  std::set<std::string> seen;
  for (auto it = value.begin(); it != value.end(); ++it) {
    const std::string name = yaml.KeyName(it->first, &seen);
    const KeyReader<TpuCreate>* reader = FindKey(kCreateKeys, name);
    if (reader == nullptr) yaml.UnknownKey(it->first, name, KeyNames(kCreateKeys));
    reader->read(yaml, it->first, it->second, &create);
  }
  pod->create = create;
}

// Every key of `pod:`, in the order in which "did you mean" prefers equally close ones.
constexpr KeyReader<PodSettings> kPodKeys[] = {
    {"hosts", ReadHosts},
    {"tpu", ReadTpu},
    {"mig", ReadMig},
    {"zone", ReadZone},
    {"project", ReadProject},
    {"internal_ip", ReadBoolField<&PodSettings::internal_ip>},
    {"local", ReadIntField<&PodSettings::local, 1, 4096>},
    {"workers", ReadWorkers},
    {"user", ReadNonEmptyStringField<&PodSettings::user>},
    {"port", ReadIntField<&PodSettings::port, 1, 65535>},
    {"identity", ReadNonEmptyStringField<&PodSettings::identity>},
    {"ssh_config", ReadNonEmptyStringField<&PodSettings::ssh_config>},
    {"known_hosts", ReadNonEmptyStringField<&PodSettings::known_hosts>},
    {"jump", ReadJump},
    {"strict_host_keys", ReadBoolField<&PodSettings::strict_host_keys>},
    {"fanout", ReadIntField<&PodSettings::fanout, 1, 1000000>},
    {"connect_timeout", ReadIntField<&PodSettings::connect_timeout, 1, 1000000>},
    {"create", ReadCreate},
};

}  // namespace

void ReadPodSection(const YamlReader& yaml, const Node& key, const Node& value, PodSettings* pod) {
  if (value.IsNull()) return;
  if (!value.IsMap()) yaml.WrongType(key, value, "a mapping");
  std::set<std::string> seen;
  std::string kind;  // the key that chose the kind of pod: hosts, tpu, mig or local
  for (auto it = value.begin(); it != value.end(); ++it) {
    const Node k = it->first;
    const Node v = it->second;
    std::string name = yaml.KeyName(k, &seen);
    if (name == "hosts" || name == "tpu" || name == "mig" || name == "local") {
      if (!kind.empty()) {
        yaml.Fail(k.Mark(), "'pod' has both '" + kind + "' and '" + name +
                                "' (give one of hosts, tpu, mig, local)");
      }
      kind = name;
    }
    const KeyReader<PodSettings>* reader = FindKey(kPodKeys, name);
    if (reader == nullptr) yaml.UnknownKey(k, name, KeyNames(kPodKeys));
    reader->read(yaml, k, v, pod);
  }
  if (pod->create) {
    const YAML::Mark at = YamlReader::FindKeyMark(value, "create");
    const YAML::Mark create_at = value["create"].Mark();  // its value: where the keys are
    if (pod->mig) {
      if (!pod->zone) {
        yaml.Fail(at, "'create' needs the slice's 'mig' and 'zone' in this 'pod' section");
      }
      if (std::string problem = MigCreateProblem(*pod->create); !problem.empty()) {
        yaml.Fail(create_at, "create: " + problem);
      }
    } else {
      if (!pod->tpu || !pod->zone) {
        yaml.Fail(at, "'create' needs the node's 'tpu' and 'zone' in this 'pod' section");
      }
      if (std::string problem = TpuCreateProblem(*pod->create); !problem.empty()) {
        yaml.Fail(create_at, "create: " + problem);
      }
    }
  }
}

bool IsPodKey(const std::string& name) { return FindKey(kPodKeys, name) != nullptr; }

}  // namespace podrun
