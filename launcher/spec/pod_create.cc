// See pod_create.h.
#include "launcher/spec/pod_create.h"

#include <algorithm>

#include "launcher/pod/tpu_names.h"

namespace podrun {

bool SpecCreateCovers(const PodSettings& spec, const SliceRef& node, PodSourceKind kind) {
  const std::optional<std::string>& list = kind == PodSourceKind::kMig ? spec.mig : spec.tpu;
  if (!spec.create || !list || !spec.zone) return false;
  // The slice lives where it was made: in the spec's zone or one of its fallback zones.
  const std::vector<std::string> zones = SliceZones(*spec.create, *spec.zone);
  if (std::find(zones.begin(), zones.end(), node.zone) == zones.end()) return false;
  // A spec that names a project covers only a node known to be in it: a node chosen without a
  // project (`--tpu SAME --zone Z`, gcloud's default project) may be in any.
  if (spec.project && (!node.project || *spec.project != *node.project)) return false;
  const std::vector<std::string> names = SplitTpuNames(*list);
  return std::find(names.begin(), names.end(), node.name) != names.end();
}

std::optional<TpuCreate> SpecCreateFor(const PodSettings& spec, const PodSourceRef& slice) {
  if (!SpecCreateCovers(spec, slice.query, slice.kind)) return std::nullopt;
  return spec.create;
}

}  // namespace podrun
