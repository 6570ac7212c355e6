// Choosing a pod source by kind (see pod_source.h). Each kind is one file.
#include "launcher/pod/pod_source.h"

namespace podrun {

std::unique_ptr<PodSource> MakeTpuNodeSource(const SliceRef& query,
                                             const std::filesystem::path& cache_dir);
std::unique_ptr<PodSource> MakeMigSource(const SliceRef& query,
                                         const std::filesystem::path& cache_dir);

std::unique_ptr<PodSource> MakePodSource(const PodSourceRef& ref,
                                         const std::filesystem::path& cache_dir) {
  switch (ref.kind) {
    case PodSourceKind::kMig:
      return MakeMigSource(ref.query, cache_dir);
    case PodSourceKind::kTpuNode:
      break;
  }
  return MakeTpuNodeSource(ref.query, cache_dir);
}

const char* PodSourceKindName(PodSourceKind kind) {
  return kind == PodSourceKind::kMig ? "mig" : "tpu";
}

std::string SliceLabel(const PodSourceRef& ref) {
  return std::string(PodSourceKindName(ref.kind)) + " " + ref.query.name;
}

const char* PodSourceNoun(PodSourceKind kind) {
  return kind == PodSourceKind::kMig ? "MIG slice" : "TPU node";
}

}  // namespace podrun
