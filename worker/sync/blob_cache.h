// BlobCache: the worker's content-addressed store of synced files and relayed agent binaries
// (docs/design.md decision 11), `<home>/blobs/<first 2 hex digits>/<sha256>`. A blob appears only
// whole and checked: it is written to a temporary file, its hash compared, then renamed into
// place. Safe for several agents sharing one home (NFS, --local): renames are atomic.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "proto/sha256.h"
#include "proto/unique_fd.h"

namespace podrun::agent {

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
