// The local side of code sync: the `sync:` directory as a manifest of content-addressed files
// (what the agents' ApplySync brings each workdir to), honouring the tree's ignore files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace podrun {

struct ManifestFile {
  std::string path;     // relative to the root, '/'-separated
  uint64_t size = 0;    // of the content; for a symlink, of its target text
  uint32_t mode = 0;    // permission bits (st_mode & 07777)
  std::string sha256;   // lowercase hex of the content; for a symlink, of its target text
  std::string symlink;  // non-empty: a symlink with this target (kept as a link, not followed)
};

struct Manifest {
  std::vector<ManifestFile> files;  // sorted by path (byte order)
  uint64_t bytes = 0;               // sum of the regular files' sizes
};

// Walks `root` honouring the ignore rules (launcher/sync/ignore_rules.h); regular files and
// symlinks only (empty directories, sockets, fifos, devices are skipped; symlinked directories
// are not followed). Throws UsageError naming root when it is not a readable directory, and
// naming the file when one cannot be read.
Manifest BuildManifest(const std::filesystem::path& root);

// The manifest as the agent reads it: a serialized podrun.agent.v1.SyncManifest, the same bytes
// for the same manifest.
std::string SerializeManifest(const Manifest& manifest);

// The distinct content blobs (sha256 of regular files, not symlinks), first-seen order.
std::vector<std::string> ManifestBlobs(const Manifest& manifest);

}  // namespace podrun
