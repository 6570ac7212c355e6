// The POD OPTIONS shared by every command that talks to workers (docs/reference.md, "Selecting the
// pod"): their registration on a command line and their merging with a spec's `pod:` section.
#pragma once

#include <CLI/CLI.hpp>

#include "launcher/spec/pod_settings.h"

namespace podrun {

// Registers --hosts, --tpu, --mig, --zone, --project, --internal-ip, --local, -w, -l, -p, -i, -F,
// -J,
// --known-hosts, --strict-host-keys, --fanout, --connect-timeout on `app`, filling `pod`.
void AddPodOptions(CLI::App& app, PodSettings& pod);

// Field by field: what `cli` sets, else what `spec` sets (the command line wins). A pod chosen on
// the command line replaces the spec's as a whole; the spec's `create:` is kept only when that
// pod is the spec's own node (SpecCreateCovers).
PodSettings MergePodSettings(const PodSettings& cli, const PodSettings& spec);

}  // namespace podrun
