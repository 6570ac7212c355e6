// Which slices (TPU nodes, MIG slices) a spec's `pod.create` is for (docs/reference.md,
// "Provisioning and recovery"): only the spec's own nodes. A node chosen on the command line
// (`--tpu OTHER`), or one in another zone or project, is used as it is: never created, deleted or
// recreated with that `create:`.
#pragma once

#include <optional>
#include <string>

#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_create.h"
#include "launcher/pod/tpu_discovery.h"
#include "launcher/spec/pod_settings.h"

namespace podrun {

// True when `spec` (a spec's `pod:` section) has `create:` and names `node`: one of the names of
// its `tpu:` ("A" or "A,B"; its `mig:` for kind kMig), in its zone or one of create:'s
// fallback_zones (where the slice was made), in its project when it names
// one (a node whose project podrun pinned from gcloud's default matches a spec that names none; a
// node without a project is not covered by a spec that names one: it may be in another).
bool SpecCreateCovers(const PodSettings& spec, const SliceRef& node,
                      PodSourceKind kind = PodSourceKind::kTpuNode);

// spec.create when SpecCreateCovers(spec, slice), else nullopt.
std::optional<TpuCreate> SpecCreateFor(const PodSettings& spec, const PodSourceRef& slice);

}  // namespace podrun
