// The peer link (docs/design.md decision 11): workers relay synced blobs to one another over the
// pod's internal network, so the launcher's uplink carries each blob once. A BlobServer is a
// short-lived TCP listener serving the blobs of one manifest; FetchBlobs is its client. Both
// ends prove they hold the transfer's key (from the launcher, through SSH) and everything is
// encrypted and authenticated (worker/sync/peer_crypto.h); every blob is checked against its hash
// as it arrives, before it enters the fetcher's cache.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <unordered_set>

#include "proto/unique_fd.h"
#include "worker/sync/blob_cache.h"

namespace podrun::agent {

// Serves the blobs of one manifest (and the manifest blob itself, nothing else) from `cache` to
// peers that know `key` (32 bytes), on a TCP listener bound to address:0 (a numeric IPv4 or IPv6
// address). One thread accepts; each connection gets its own thread (at most kMaxConnections at
// once; more wait in the backlog). After `lifetime` it closes by itself: the listener and any open
// connection. The destructor does the same sooner and joins every thread. Blobs are sent as the
// cache holds them: the fetcher checks their hashes.
class BlobServer {
 public:
  static constexpr size_t kMaxConnections = 8;

  // Throws AgentError when the manifest is not in the cache or does not parse
  // (kFailedPrecondition), the key is not 32 bytes (kInvalidArgument), or the address cannot be
  // listened on (kInternal).
  BlobServer(const BlobCache& cache, const std::string& address, std::string key,
             const std::string& manifest_sha256, std::chrono::seconds lifetime);
  ~BlobServer();
  BlobServer(const BlobServer&) = delete;
  BlobServer& operator=(const BlobServer&) = delete;

  uint16_t port() const { return port_; }
  // Blobs sent whole, and their bytes (content, not wire overhead). Thread-safe.
  uint64_t blobs_served() const { return blobs_served_; }
  uint64_t bytes_served() const { return bytes_served_; }

 private:
  struct Connection;

  void AcceptLoop();
  void Serve(int fd);
  void Wake();

  const BlobCache& cache_;
  const std::string key_;
  std::unordered_set<std::string> allowed_;
  const std::chrono::steady_clock::time_point deadline_;
  UniqueFd listener_;
  UniqueFd wake_;  // an eventfd: the destructor or an ending connection rouses AcceptLoop
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> blobs_served_{0};
  std::atomic<uint64_t> bytes_served_{0};
  std::list<std::unique_ptr<Connection>> connections_;  // AcceptLoop's own
  std::thread acceptor_;
};

struct FetchResult {
  uint64_t blobs = 0;  // fetched, the manifest included when it was fetched too
  uint64_t bytes = 0;
};

// Connects to a peer's BlobServer (`host`: a numeric IP address) and fetches the manifest (unless
// cached), then every content blob of it that `cache` lacks (each distinct hash once; symlinks have
// none), each written through BlobCache::Writer and so checked against its hash. One connection,
// requests pipelined. `timeout` (1 s at least) bounds connecting and each read or write. Throws
// AgentError naming host:port and what failed: refused, timeout, bad key, a hash mismatch, the peer
// refusing or lacking a blob. Blobs committed before a failure stay in the cache (they are whole
// and checked).
FetchResult FetchBlobs(BlobCache& cache, const std::string& host, uint16_t port,
                       const std::string& key, const std::string& manifest_sha256,
                       std::chrono::seconds timeout);

}  // namespace podrun::agent
