// The code sync RPCs (see sync_rpc.h).
#include "worker/rpc/sync_rpc.h"

#include <unistd.h>

#include <atomic>
#include <unordered_set>
#include <vector>

#include "proto/sha256.h"
#include "worker/base/agent_error.h"
#include "worker/job/job_runner.h"
#include "worker/sync/peer_link.h"
#include "worker/sync/workdir_sync.h"

namespace podrun::agent {
namespace {

// A peer silent this long while a child fetches from it has failed (cut off, stalled, gone): the
// child falls back to its own connection. Short: every second of it delays the whole level.
constexpr auto kFetchTimeout = std::chrono::seconds(10);
constexpr uint32_t kMaxServeSeconds = 3600;
// The blob cache is pruned after an ApplySync, at most this often.
constexpr auto kPruneEvery = std::chrono::hours(1);

// Prunes `cache` when due, keeping `in_use` (the manifest just applied and its blobs). Never
// fails the sync: a pass that fails is retried at the next one.
void PruneIfDue(const BlobCache& cache, const std::unordered_set<std::string>& in_use,
                std::atomic<int64_t>& next_prune_ns) {
  const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
  int64_t due = next_prune_ns.load();
  if (now < due || !next_prune_ns.compare_exchange_strong(
                       due, now + std::chrono::nanoseconds(kPruneEvery).count())) {
    return;  // not due, or another ApplySync prunes now
  }
  try {
    cache.Prune(BlobCacheLimits{}, in_use);
  } catch (const std::exception&) {
    // Pruning is housekeeping: the sync succeeded all the same.
  }
}

std::string Hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

v1::SyncManifest ReadManifest(const BlobCache& cache, const std::string& sha256) {
  v1::SyncManifest manifest;
  if (!manifest.ParseFromString(cache.Read(sha256))) {
    throw AgentError(ErrorKind::kInvalidArgument, "sync: manifest " + sha256 + " is malformed");
  }
  return manifest;
}

}  // namespace

SyncRpc::SyncRpc(const std::filesystem::path& home) : home_(home), cache_(home / "blobs") {}

SyncRpc::~SyncRpc() = default;

void SyncRpc::BlobsMissing(const v1::BlobsMissingRequest& req, v1::BlobsMissingReply* reply) {
  for (const std::string& sha256 : req.sha256()) {
    // Present: used now, so pruning keeps it until the ApplySync that follows.
    if (!cache_.Use(sha256)) reply->add_sha256(sha256);
  }
}

void SyncRpc::PutBlobs(grpc::ServerReader<v1::BlobChunk>* reader, v1::PutBlobsReply* reply) {
  std::unique_ptr<BlobCache::Writer> writer;
  v1::BlobChunk chunk;
  while (reader->Read(&chunk)) {
    if (!writer) {
      writer = std::make_unique<BlobCache::Writer>(cache_, chunk.sha256());
    } else if (chunk.sha256() != writer->sha256()) {
      throw AgentError(ErrorKind::kInvalidArgument,
                       "sync: blob " + writer->sha256() + " ended without its last chunk");
    }
    writer->Append(chunk.data());
    if (chunk.last()) {
      writer->Commit();
      reply->set_blobs(reply->blobs() + 1);
      reply->set_bytes(reply->bytes() + writer->size());
      writer.reset();
    }
  }
  if (writer) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "sync: blob " + writer->sha256() + " ended without its last chunk");
  }
}

void SyncRpc::ServeBlobs(const v1::ServeBlobsRequest& req, v1::ServeBlobsReply* reply) {
  if (req.key().size() != 32) {
    throw AgentError(ErrorKind::kInvalidArgument, "sync: a peer key is 32 bytes");
  }
  if (!cache_.Has(req.manifest_sha256())) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "sync: manifest " + req.manifest_sha256() + " is not in the cache");
  }
  const auto seconds =
      std::chrono::seconds(std::min(std::max(req.seconds(), 1u), kMaxServeSeconds));
  // On the worker's pod address only, never every interface (docs/design.md decision 15): an
  // address this machine lacks is refused, and the launcher sends to the peers itself.
  auto server = std::make_unique<BlobServer>(cache_, req.address(), req.key(),
                                             req.manifest_sha256(), seconds);
  const uint32_t port = server->port();
  reply->set_port(port);
  std::vector<std::unique_ptr<BlobServer>> closed;  // destroyed once the lock is let go
  std::lock_guard lock(mu_);
  // Servers that closed by themselves (idle, or their time up) and were never ended: forgotten.
  for (auto it = servers_.begin(); it != servers_.end();) {
    if (it->second->serving()) {
      ++it;
    } else {
      closed.push_back(std::move(it->second));
      it = servers_.erase(it);
    }
  }
  servers_[port] = std::move(server);
}

void SyncRpc::FetchBlobs(const v1::FetchBlobsRequest& req, v1::FetchBlobsReply* reply) {
  if (req.port() == 0 || req.port() > 65535) {
    throw AgentError(ErrorKind::kInvalidArgument, "sync: bad peer port");
  }
  const FetchResult got =
      podrun::agent::FetchBlobs(cache_, req.host(), static_cast<uint16_t>(req.port()), req.key(),
                                req.manifest_sha256(), kFetchTimeout);
  reply->set_blobs(got.blobs);
  reply->set_bytes(got.bytes);
}

void SyncRpc::EndServe(const v1::EndServeRequest& req, v1::EndServeReply* reply) {
  std::unique_ptr<BlobServer> server;
  {
    std::lock_guard lock(mu_);
    auto it = servers_.find(req.port());
    if (it == servers_.end()) return;  // already ended (or timed out and ended here)
    server = std::move(it->second);
    servers_.erase(it);
  }
  reply->set_blobs_served(server->blobs_served());
  reply->set_bytes_served(server->bytes_served());
}

void SyncRpc::ApplySync(const v1::ApplySyncRequest& req, v1::ApplySyncReply* reply) {
  const std::filesystem::path workdir = ResolveWorkdir(req.workdir());
  const v1::SyncManifest manifest = ReadManifest(cache_, req.manifest_sha256());
  std::unordered_set<std::string> in_use = {req.manifest_sha256()};
  for (const auto& entry : manifest.entries()) {
    if (entry.symlink().empty() && IsSha256Hex(entry.sha256())) in_use.insert(entry.sha256());
  }
  for (const std::string& sha256 : in_use) cache_.Use(sha256);
  const std::filesystem::path state = home_ / "sync" / Hostname() / Sha256Hex(workdir.string());
  const SyncApplied applied = ApplyManifest(cache_, manifest, workdir, state);
  reply->set_written(applied.written);
  reply->set_deleted(applied.deleted);
  reply->set_unchanged(applied.unchanged);
  PruneIfDue(cache_, in_use, next_prune_ns_);
}

}  // namespace podrun::agent
