// AgentSyncClient: code sync's calls to one agent (proto/agent.proto, "Code sync";
// docs/design.md decision 11): the blobs its cache lacks, sending blobs, serving them to peers
// and fetching them from one, and bringing a workdir to a manifest. AgentClient gives one
// (`sync()`).
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_refusal.h"

namespace podrun {

// A blob to send with PutBlobs: a local file's content, or bytes in memory (a manifest).
struct AgentBlob {
  std::string sha256;
  std::string file;  // read from here when set, in chunks
  std::string data;  // else these bytes
};

// What ApplySync did to a workdir.
struct AgentSyncApplied {
  uint64_t written = 0;
  uint64_t deleted = 0;
  uint64_t unchanged = 0;
};

// Code sync with one agent behind one channel. Every method blocks; each may be called from any
// thread, concurrently. Errors are AgentClient's: AgentRefusal when the agent refused, a plain
// Error(kUnreachable) when the transport failed. Timeouts per call are the constants in the .cc.
class AgentSyncClient {
 public:
  explicit AgentSyncClient(std::shared_ptr<grpc::Channel> channel);
  ~AgentSyncClient();

  // The blobs of `sha256s` the worker's cache lacks, in the given order.
  std::vector<std::string> BlobsMissing(const std::vector<std::string>& sha256s);
  // Sends blobs through this connection; returns the bytes sent. Throws Error naming a local
  // file that cannot be read, or the agent's refusal (a hash that does not match).
  uint64_t PutBlobs(const std::vector<AgentBlob>& blobs);
  // Opens a peer listener on `address` serving the manifest's blobs to holders of `key`;
  // returns its port.
  uint16_t ServeBlobs(const std::string& address, const std::string& key,
                      const std::string& manifest_sha256, std::chrono::seconds lifetime);
  // Has the worker fetch the manifest's blobs it lacks from a peer's listener; returns the
  // bytes fetched.
  uint64_t FetchBlobs(const std::string& host, uint16_t port, const std::string& key,
                      const std::string& manifest_sha256);
  // Closes a listener; returns the bytes it served.
  uint64_t EndServe(uint16_t port);
  // Brings `workdir` to the manifest (blobs must be in the worker's cache).
  AgentSyncApplied ApplySync(const std::string& workdir, const std::string& manifest_sha256);

 private:
  struct Stub;  // the generated stub; kept out of this header
  std::unique_ptr<Stub> stub_;
};

}  // namespace podrun
