// The spec's `mounts:` section: its list of mounts, read and checked (internal to spec/).
#pragma once

#include <yaml-cpp/yaml.h>

#include <vector>

#include "launcher/spec/spec.h"
#include "launcher/spec/yaml_reader.h"

namespace podrun {

// Reads the value of `mounts:` (`key` is the key `mounts` itself) into `mounts`; nothing for an
// empty value. Fails through `yaml` on a mount whose type is unknown, that lacks a key its type
// requires or has one it does not take, whose path is not absolute, or whose path is used twice.
void ReadMountsSection(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                       std::vector<Mount>* mounts);

}  // namespace podrun
