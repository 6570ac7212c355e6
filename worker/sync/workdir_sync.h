// Bringing a workdir to a synced tree's manifest from the blob cache (ApplySync; docs/reference.md,
// the spec's `sync`): files that differ are written (whole, then renamed into place, checked
// against their hash on the way), files the previous sync wrote and the manifest no longer
// lists are deleted, everything else in the workdir (what the job wrote) is kept.
#pragma once

#include <cstdint>
#include <filesystem>

#include "proto/agent.pb.h"
#include "worker/sync/blob_cache.h"

namespace podrun::agent {

struct SyncApplied {
  uint64_t written = 0;
  uint64_t deleted = 0;
  uint64_t unchanged = 0;
};

// Throws AgentError naming the file on a bad manifest path, a missing or corrupt blob (the
// corrupt blob is removed from the cache), or a write error. `state_file` records what was
// applied (the next call's "previous manifest"); concurrent calls on one state file wait for
// each other. The workdir must exist.
SyncApplied ApplyManifest(const BlobCache& cache, const v1::SyncManifest& manifest,
                          const std::filesystem::path& workdir,
                          const std::filesystem::path& state_file);

// True for a manifest path: relative, '/'-separated, no empty, "." or ".." component.
bool IsSafeManifestPath(const std::string& path);

}  // namespace podrun::agent
