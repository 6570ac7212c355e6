// Discovery of a Cloud TPU VM pod's workers (docs/reference.md, "Discovery"): runs
// `gcloud compute tpus tpu-vm describe NAME --zone ZONE [--project P] --format=json` (the gcloud
// on PATH, or $PODRUN_GCLOUD) and keeps the answer for a few minutes, since one describe costs
// about a second of gcloud's own start-up, more than a whole fan-out to 16 workers.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/slice_ref.h"
#include "launcher/pod/tpu_node.h"

namespace podrun {

// gcloud's argv for `query` ($PODRUN_GCLOUD or "gcloud" first). Here and below, a name that the
// API would not allow throws Error(kUsage) before any use (tpu_names.h).
std::vector<std::string> GcloudDescribeCommand(const SliceRef& query);

// The node, from the cache in `cache_dir` if it is younger than kSliceCacheTtl and READY (unless
// `refresh`), else from gcloud (and then cached). Throws Error(kUnreachable) with gcloud's own
// message when it fails (no such node, not logged in, no gcloud) or its answer is not a node.
// `from_cache`, if given, is set to whether the answer came from the cache.
TpuNode DescribeTpuNode(const SliceRef& query, const std::filesystem::path& cache_dir, bool refresh,
                        bool* from_cache = nullptr);

// Drops the cached answer for `query` (a node podrun deleted or created: its addresses change).
void ForgetCachedTpuNode(const SliceRef& query, const std::filesystem::path& cache_dir);

}  // namespace podrun
