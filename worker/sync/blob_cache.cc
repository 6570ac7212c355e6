// The content-addressed blob store (see blob_cache.h).
#include "worker/sync/blob_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

// A name no other writer (thread or process, same home or not) picks at the same moment.
std::string TempSuffix() {
  static std::atomic<uint64_t> counter{0};
  char host[64] = {};
  ::gethostname(host, sizeof(host) - 1);
  return ".tmp." + std::string(host) + "." + std::to_string(::getpid()) + "." +
         std::to_string(counter.fetch_add(1));
}

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
