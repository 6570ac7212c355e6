// Discovery of a pod from its cloud sources (docs/reference.md, "Discovery"): --tpu A[,B] (Cloud
// TPU nodes) or --mig A[,B] (Compute Engine MIG slices), each described through its PodSource
// (pod/pod_source.h), checked ready, numbered in TPU worker order, and cached.
#pragma once

#include "launcher/connect/pod.h"
#include "launcher/spec/pod_settings.h"

namespace podrun {

// Fills pod->workers (slice by slice in the order given, each in TPU worker order), sources,
// cloud_tpu, internal_ip, slices and description from `s` (which names --tpu or --mig).
// The SSH settings of `pod` must be filled: a MIG whose API does not show its VMs' TPU worker
// numbers is put in order by asking the VMs (worker_numbers.h), after `described` (if given) was
// called for every slice. A cached answer whose workers do not answer at their addresses is asked
// again at once. Throws Error(kUsage) for bad or missing options, Error(kUnreachable) naming the
// node or instance and its state when it is not ready, or with gcloud's words when gcloud fails;
// and what `described` throws.
void DiscoverCloudPod(const PodSettings& s, Pod* pod, const SliceDescribed& described = {});

}  // namespace podrun
