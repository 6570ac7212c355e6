// BlobCache: the worker's content-addressed store of synced files and relayed agent binaries
// (docs/design.md decision 11), `<home>/blobs/<first 2 hex digits>/<sha256>`. A blob appears only
// whole and checked: it is written to a temporary file, its hash compared, then renamed into
// place. Safe for several agents sharing one home (NFS, --local): renames are atomic.
//
// Pruning (BlobCache::Prune, after an ApplySync) uses a blob's mtime as when it was last used:
// written, found present (BlobsMissing, a peer fetch) or applied to a workdir (BlobCache::Use).
// Blobs unused longer than the age cap go first, then the least recently used until the cache
// fits its size cap; blobs used recently, and those the caller names (the manifest in use), are
// never removed. Temporary files of writers that never committed (a crash) go once nothing has
// been written to them for a while. The caps: BlobCacheLimits.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_set>

#include "proto/sha256.h"
#include "proto/unique_fd.h"

namespace podrun::agent {

// What BlobCache::Prune keeps.
struct BlobCacheLimits {
  // The cache is trimmed to this many bytes (of blobs' content), least recently used first.
  uint64_t max_bytes = uint64_t{10} << 30;
  // A blob unused this long is removed, whatever the size.
  std::chrono::hours max_unused = std::chrono::hours(24 * 14);
  // A blob used this recently is kept, whatever the size: a sync may be between its
  // BlobsMissing and its ApplySync, on this host or another sharing the home.
  std::chrono::minutes recent = std::chrono::minutes(60);
  // A writer's temporary file untouched this long is a crash's leftover.
  std::chrono::minutes leftover = std::chrono::minutes(30);
};

struct BlobCachePruned {
  uint64_t blobs = 0;      // removed
  uint64_t bytes = 0;      // their content
  uint64_t leftovers = 0;  // temporary files removed
  uint64_t kept_bytes = 0;
};

class BlobCache {
 public:
  // Creates `dir` (0700) if missing; throws AgentError when it cannot.
  explicit BlobCache(std::filesystem::path dir);

  const std::filesystem::path& dir() const { return dir_; }
  // Throws AgentError(kInvalidArgument) unless `sha256` is 64 lowercase hex digits.
  std::filesystem::path PathOf(const std::string& sha256) const;
  bool Has(const std::string& sha256) const;
  // The whole blob (for small ones: manifests); throws AgentError when missing.
  std::string Read(const std::string& sha256) const;
  // Has, and when the blob is present marks it used now, so Prune keeps it longest.
  bool Use(const std::string& sha256) const;

  // Removes, as `limits` say, blobs unused too long or beyond the size cap (never those in
  // `keep`) and writers' leftovers; `now` is the present (a parameter for tests). Best effort:
  // errors are skipped, the next pass tries again; files it does not know are left alone.
  BlobCachePruned Prune(
      const BlobCacheLimits& limits, const std::unordered_set<std::string>& keep,
      std::filesystem::file_time_type now = std::filesystem::file_time_type::clock::now()) const;

  // One blob being received. Append in order, then Commit; destroying it uncommitted removes
  // the partial file. Not thread-safe; several writers of the same blob may race harmlessly.
  class Writer {
   public:
    Writer(const BlobCache& cache, std::string sha256);
    ~Writer();
    Writer(const Writer&) = delete;
    Writer& operator=(const Writer&) = delete;

    void Append(std::string_view data);  // throws AgentError(kInternal) on a write error
    // Checks the hash of what was appended and moves the blob into place. Throws
    // AgentError(kInvalidArgument) on a mismatch (the partial file is removed).
    void Commit();
    uint64_t size() const { return size_; }
    const std::string& sha256() const { return sha256_; }

   private:
    std::string sha256_;
    std::filesystem::path final_;
    std::filesystem::path temp_;
    UniqueFd fd_;
    Sha256 hash_;
    uint64_t size_ = 0;
    bool committed_ = false;
  };

  // Stores `data` as a blob (hash computed here); returns its sha256.
  std::string Put(std::string_view data) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace podrun::agent
