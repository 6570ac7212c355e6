// See mounts_section.h; also MountTypeName of spec.h.
#include "launcher/spec/mounts_section.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

namespace podrun {
namespace {

// One entry of `mounts:`, a mapping.
Mount ReadMount(const YamlReader& yaml, const YAML::Node& entry) {
  Mount mount;
  const YAML::Node type = entry["type"];
  if (!type) yaml.Fail(entry.Mark(), "mount without 'type' (nfs, gcsfuse, sshfs or bind)");
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
    yaml.Fail(type.Mark(), "bad mount type '" + type_name + "' (nfs, gcsfuse, sshfs or bind)");
  }
  std::vector<std::string_view> allowed = required;
  allowed.push_back("type");
  allowed.push_back("options");
  constexpr std::string_view kAnyMountKey[] = {"server", "export", "bucket", "source"};

  std::set<std::string> seen;
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    const YAML::Node k = it->first;
    const YAML::Node v = it->second;
    std::string name = yaml.KeyName(k, &seen);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      if (std::find(std::begin(kAnyMountKey), std::end(kAnyMountKey), name) !=
          std::end(kAnyMountKey)) {
        yaml.Fail(k.Mark(), "'" + name + "' does not apply to a " + type_name + " mount");
      }
      yaml.UnknownKey(k, name, allowed);
    }
    if (name == "type") continue;
    if (name == "options") {
      if (v.IsSequence()) {
        std::string joined;
        for (auto& [option, mark] : yaml.List(k, v, false)) {
          joined += (joined.empty() ? "" : ",") + option;
        }
        mount.options = joined;
      } else if (!v.IsNull()) {
        mount.options = yaml.String(k, v);
      }
      continue;
    }
    std::string s = yaml.NonEmptyString(k, v);
    if (name == "server") mount.server = s;
    if (name == "export") mount.export_path = s;
    if (name == "bucket") mount.bucket = s;
    if (name == "source") mount.source = s;
    if (name == "path") {
      if (s[0] != '/' && s != "~" && s.rfind("~/", 0) != 0) {
        yaml.Fail(v.Mark(), "mount path '" + s + "' must be absolute (or start with ~/)");
      }
      mount.path = s;
    }
  }
  for (std::string_view name : required) {
    if (!seen.count(std::string(name))) {
      yaml.Fail(entry.Mark(), type_name + " mount without '" + std::string(name) + "'");
    }
  }
  return mount;
}

}  // namespace

void ReadMountsSection(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                       std::vector<Mount>* mounts) {
  if (value.IsNull()) return;
  if (!value.IsSequence()) yaml.WrongType(key, value, "a list of mounts");
  for (const YAML::Node& entry : value) {
    if (!entry.IsMap()) {
      yaml.Fail(entry.Mark(), "a mount is a mapping like {type: bind, source: /data, path: /mnt}");
    }
    mounts->push_back(ReadMount(yaml, entry));
    for (size_t i = 0; i + 1 < mounts->size(); ++i) {
      if ((*mounts)[i].path == mounts->back().path) {
        yaml.Fail(entry.Mark(), "mount path '" + mounts->back().path + "' is used twice");
      }
    }
  }
}

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

}  // namespace podrun
