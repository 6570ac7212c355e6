// What a lost worker of a discovered TPU pod means: its node is asked afresh, so that a
// preempted (or otherwise not READY) node is named as such in the launch's report, `status` and
// the job record, not reported as a bare "lost".
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "launcher/pod/pod_options.h"

namespace podrun {

// For worker `index` of `pod`: "preempted: TPU node NAME is PREEMPTED (gcloud)" or "TPU node
// NAME is STATE, not READY (gcloud)" when gcloud now reports its node in any state but READY;
// nullopt when the node is READY, gcloud cannot answer, or the pod was not discovered with --tpu.
// Blocks for one gcloud describe; `cache_dir` gets the fresh answer.
std::optional<std::string> NodeStateOfLostWorker(const Pod& pod, int index,
                                                 const std::filesystem::path& cache_dir);

}  // namespace podrun
