// The pod of a recorded job: what launch stores so that logs, status, stop and rerun reach
// the same workers the same way from any terminal.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "launcher/connect/pod.h"
#include "launcher/store/job_store.h"

namespace podrun {

// The job record's hosts for `pod`, with the addresses the workers reach each other at.
std::vector<JobHost> JobHostsOf(const Pod& pod, const std::vector<std::string>& addresses);

// The connection settings of `pod` (SSH options, fan-out, --local root), as JSON for the store.
std::string PodOptionsJson(const Pod& pod, const std::filesystem::path& local_root);

// `options_json` (PodOptionsJson) with `pod`'s slices (their zones) instead of its own.
std::string WithPodSlices(const std::string& options_json, const Pod& pod);

// The zones the recorded job's slices live in (each once, in slice order); none for a pod that
// was not discovered (--hosts, --local) or a record that cannot be read.
std::vector<std::string> JobZones(const JobRecord& job);

// Rebuilds the pod of a recorded job (all workers selected) and its --local root.
// Throws Error(kUsage) if the record cannot be read.
Pod PodOfJob(const JobRecord& job, std::filesystem::path* local_root);

}  // namespace podrun
