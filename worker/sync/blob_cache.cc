// The content-addressed blob store (see blob_cache.h).
#include "worker/sync/blob_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "proto/write_all.h"
#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;

void MakePrivateDir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw AgentError(ErrorKind::kInternal, "blob cache " + dir.string() + ": " + ErrnoMessage());
  }
}

// Marks a writer's temporary file: `<sha256>.tmp.<host>.<pid>.<n>`.
constexpr std::string_view kTempMark = ".tmp.";

// A name no other writer (thread or process, same home or not) picks at the same moment.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  char host[64] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(kTempMark) + std::string(host) + "." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

// Calls `fn` with each entry of `dir`; errors end the listing (pruning is best effort).
template <typename Fn>
void ForEachEntry(const fs::path& dir, Fn fn) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) fn(*it);
}

struct CachedBlob {
  fs::path path;
  uint64_t size = 0;
  fs::file_time_type used;  // its mtime
};

}  // namespace

BlobCache::BlobCache(fs::path dir) : dir_(std::move(dir)) { MakePrivateDir(dir_); }

fs::path BlobCache::PathOf(const std::string& sha256) const {
  if (!IsSha256Hex(sha256)) {
    throw AgentError(ErrorKind::kInvalidArgument, "not a sha256 content address: " + sha256);
  }
  return dir_ / sha256.substr(0, 2) / sha256;
}

bool BlobCache::Has(const std::string& sha256) const {
  struct stat st {};
  return ::stat(PathOf(sha256).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string BlobCache::Read(const std::string& sha256) const {
  std::ifstream in(PathOf(sha256), std::ios::binary);
  if (!in) throw AgentError(ErrorKind::kNotFound, "blob " + sha256 + " is not in the cache");
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

bool BlobCache::Use(const std::string& sha256) const {
  if (!Has(sha256)) return false;
  const timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  ::utimensat(AT_FDCWD, PathOf(sha256).c_str(), times, 0);  // at worst, pruned sooner
  return true;
}

BlobCachePruned BlobCache::Prune(const BlobCacheLimits& limits,
                                 const std::unordered_set<std::string>& keep,
                                 fs::file_time_type now) const {
  BlobCachePruned pruned;
  std::vector<CachedBlob> blobs;
  uint64_t total = 0;
  ForEachEntry(dir_, [&](const fs::directory_entry& shard) {
    std::error_code shard_error;
    if (!fs::is_directory(shard.symlink_status(shard_error))) return;
    const std::string prefix = shard.path().filename().string();
    ForEachEntry(shard.path(), [&](const fs::directory_entry& file) {
      std::error_code ec;
      if (!fs::is_regular_file(file.symlink_status(ec))) return;
      const fs::file_time_type mtime = file.last_write_time(ec);
      if (ec) return;
      const uint64_t size = file.file_size(ec);
      if (ec) return;
      const std::string name = file.path().filename().string();
      if (IsSha256Hex(name) && name.starts_with(prefix)) {
        blobs.push_back({file.path(), size, mtime});
        total += size;
      } else if (name.find(kTempMark) != std::string::npos && mtime <= now - limits.leftover) {
        if (::unlink(file.path().c_str()) == 0) ++pruned.leftovers;
      }
    });
  });
  std::sort(blobs.begin(), blobs.end(),
            [](const CachedBlob& a, const CachedBlob& b) { return a.used < b.used; });
  for (const CachedBlob& blob : blobs) {
    if (blob.used > now - limits.max_unused && total <= limits.max_bytes) break;  // the rest: newer
    if (blob.used > now - limits.recent || keep.contains(blob.path.filename().string())) continue;
    std::error_code ec;
    if (fs::last_write_time(blob.path, ec) != blob.used || ec) continue;  // used meanwhile
    if (::unlink(blob.path.c_str()) != 0) continue;
    total -= blob.size;
    ++pruned.blobs;
    pruned.bytes += blob.size;
  }
  pruned.kept_bytes = total;
  return pruned;
}

std::string BlobCache::Put(std::string_view data) const {
  const std::string sha256 = Sha256Hex(data);
  if (Has(sha256)) return sha256;
  Writer writer(*this, sha256);
  writer.Append(data);
  writer.Commit();
  return sha256;
}

BlobCache::Writer::Writer(const BlobCache& cache, std::string sha256)
    : sha256_(std::move(sha256)), final_(cache.PathOf(sha256_)) {
  MakePrivateDir(final_.parent_path());
  temp_ = final_;
  temp_ += TempSuffix();
  fd_.reset(::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd_) {
    throw AgentError(ErrorKind::kInternal, "blob cache " + temp_.string() + ": " + ErrnoMessage());
  }
}

BlobCache::Writer::~Writer() {
  if (!committed_) ::unlink(temp_.c_str());
}

void BlobCache::Writer::Append(std::string_view data) {
  if (!WriteAll(fd_.get(), data)) {
    throw AgentError(ErrorKind::kInternal, "blob cache " + temp_.string() + ": " + ErrnoMessage());
  }
  hash_.Update(data);
  size_ += data.size();
}

void BlobCache::Writer::Commit() {
  const std::string got = hash_.FinishHex();
  if (got != sha256_) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "blob " + sha256_ + ": the bytes received hash to " + got);
  }
  // No fsync: a blob is checked again against its hash whenever it is used (ApplySync).
  if (::close(fd_.release()) != 0 || ::rename(temp_.c_str(), final_.c_str()) != 0) {
    throw AgentError(ErrorKind::kInternal, "blob cache " + final_.string() + ": " + ErrnoMessage());
  }
  committed_ = true;
}

}  // namespace podrun::agent
