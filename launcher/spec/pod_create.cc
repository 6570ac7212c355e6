// See pod_create.h.
#include "launcher/spec/pod_create.h"

#include <sstream>

namespace podrun {

bool SpecCreateCovers(const PodSettings& spec, const TpuQuery& node) {
  if (!spec.create || !spec.tpu || !spec.zone || *spec.zone != node.zone) return false;
  if (spec.project && node.project && *spec.project != *node.project) return false;
  std::stringstream names(*spec.tpu);
  for (std::string name; std::getline(names, name, ',');) {
    if (name == node.name) return true;
  }
  return false;
}

std::optional<TpuCreate> SpecCreateFor(const PodSettings& spec, const TpuQuery& node) {
  if (!SpecCreateCovers(spec, node)) return std::nullopt;
  return spec.create;
}

}  // namespace podrun
