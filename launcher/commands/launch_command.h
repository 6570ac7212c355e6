// `podrun launch SPEC.yaml`: records a new job and runs its first attempt (docs/reference.md).
#pragma once

#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/spec/spec.h"

namespace podrun {

struct LaunchRequest {
  std::string spec_path;
  PodSettings pod;               // from the command line; wins over the spec's pod:
  std::string name;              // -n: overrides the spec's name
  bool detach = false;           // -d: return once every worker has started
  std::vector<std::string> env;  // -e KEY=VALUE
  bool force_setup = false;
};

// Validates everything first (bad spec or usage: exit 2, nothing recorded or started), then
// records the job, prints "job: <id>" on stdout, and runs attempt 1.
ExitCode RunLaunch(const LaunchRequest& request);

// `podrun launch` in the command table (command.h): its options, registered on its app.
Command LaunchCommand();

}  // namespace podrun
