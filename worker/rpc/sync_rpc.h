// The code sync RPCs' bodies (proto/agent.proto, "Code sync"; docs/design.md decision 11): the blob
// cache under the agent's home, the peer listeners this agent serves, and ApplySync.
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "proto/agent.grpc.pb.h"
#include "worker/sync/blob_cache.h"

namespace podrun::agent {

class BlobServer;

// Thread-safe: handlers run on gRPC's threads. Methods throw AgentError.
class SyncRpc {
 public:
  // `home`: the agent's directory (blobs/ is shared by hosts sharing it; sync/<host>/ is not).
  explicit SyncRpc(const std::filesystem::path& home);
  ~SyncRpc();

  void BlobsMissing(const v1::BlobsMissingRequest& req, v1::BlobsMissingReply* reply);
  void PutBlobs(grpc::ServerReader<v1::BlobChunk>* reader, v1::PutBlobsReply* reply);
  void ServeBlobs(const v1::ServeBlobsRequest& req, v1::ServeBlobsReply* reply);
  void FetchBlobs(const v1::FetchBlobsRequest& req, v1::FetchBlobsReply* reply);
  void EndServe(const v1::EndServeRequest& req, v1::EndServeReply* reply);
  void ApplySync(const v1::ApplySyncRequest& req, v1::ApplySyncReply* reply);

 private:
  std::filesystem::path home_;
  BlobCache cache_;
  std::mutex mu_;
  // When the blob cache is next pruned (steady clock, ns; 0: at the first ApplySync).
  std::atomic<int64_t> next_prune_ns_{0};
  std::map<uint32_t, std::unique_ptr<BlobServer>> servers_;  // by port
};

}  // namespace podrun::agent
