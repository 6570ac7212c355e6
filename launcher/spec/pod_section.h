// The spec's `pod:` section: its keys, read and checked into PodSettings (internal to spec/).
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "launcher/spec/pod_settings.h"
#include "launcher/spec/yaml_reader.h"

namespace podrun {

// Reads the value of `pod:` (`key` is the key `pod` itself) into `pod`; nothing for an empty
// value. Fails through `yaml` on an unknown or repeated key, on a bad value, and when more than
// one of hosts, tpu and local is given.
void ReadPodSection(const YamlReader& yaml, const YAML::Node& key, const YAML::Node& value,
                    PodSettings* pod);

// True for a key of `pod:` (such a key at the top level gets its own message).
bool IsPodKey(const std::string& name);

}  // namespace podrun
