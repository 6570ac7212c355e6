// The peer link (docs/design.md decision 11): workers relay synced blobs to one another over the
// pod's internal network, so the launcher's uplink carries each blob once. A BlobServer is a
// short-lived TCP listener serving the blobs of one manifest; FetchBlobs is its client. Both
// ends prove they hold the transfer's key (from the launcher, through SSH) and everything is
// encrypted and authenticated (worker/sync/peer_crypto.h); every blob is checked against its hash
// as it arrives, before it enters the fetcher's cache.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "proto/unique_fd.h"
#include "worker/sync/blob_cache.h"

namespace podrun::agent {

// A manifest fetched from a peer may be at most this large (its size is not known beforehand):
// a peer announcing more is refused before anything is written, so a hostile or broken peer
// cannot fill the disk. 64 MiB holds some half a million entries.
inline constexpr uint64_t kMaxPeerManifestSize = uint64_t{64} << 20;

// How long a BlobServer waits on its peers and for them.
struct BlobServerTimeouts {
  // A connection must prove it knows the key within this, in all (however its bytes trickle in);
  // then it is closed.
  std::chrono::milliseconds handshake = std::chrono::seconds(10);
  // The server closes itself once no connection has been open for this long, counted from when
  // it opened or its last connection ended (a launcher that died never sends EndServe).
  std::chrono::milliseconds idle = std::chrono::seconds(60);
};

// Serves the blobs of one manifest (and the manifest blob itself, nothing else) from `cache` to
// peers that know `key` (32 bytes), on a TCP listener bound to address:0 (a numeric IPv4 or IPv6
// address of this machine: the worker's pod address; never a wildcard, see Listen). One thread
// accepts; each connection gets its own thread. At most kMaxHandshakes connections may be proving
// the key at once, and at most kMaxConnections be served once they have (more wait in the backlog,
// or for a slot), so strangers that connect and say nothing cannot lock out the peers. After
// `lifetime`, or when idle (`timeouts.idle`), it closes by itself: the listener and any open
// connection. The destructor does the same sooner and joins every thread. Blobs are sent as the
// cache holds them: the fetcher checks their hashes.
class BlobServer {
 public:
  static constexpr size_t kMaxConnections = 8;
  static constexpr size_t kMaxHandshakes = 32;

  // Throws AgentError when the manifest is not in the cache or does not parse
  // (kFailedPrecondition), the key is not 32 bytes (kInvalidArgument), or the address cannot be
  // listened on (Listen's kinds: a wildcard, an address this machine lacks), naming the address.
  BlobServer(const BlobCache& cache, const std::string& address, std::string key,
             const std::string& manifest_sha256, std::chrono::seconds lifetime,
             BlobServerTimeouts timeouts = {});
  ~BlobServer();
  BlobServer(const BlobServer&) = delete;
  BlobServer& operator=(const BlobServer&) = delete;

  uint16_t port() const { return port_; }
  // The address its listener is bound to, as getsockname says ("10.0.0.2").
  const std::string& bound_address() const { return bound_address_; }
  // False once it closed by itself (its lifetime over, or idle) and its threads ended.
  // Thread-safe.
  bool serving() const { return !closed_; }
  // Blobs sent whole, and their bytes (content, not wire overhead). Thread-safe.
  uint64_t blobs_served() const { return blobs_served_; }
  uint64_t bytes_served() const { return bytes_served_; }

 private:
  struct Connection;

  void AcceptLoop();
  void Serve(Connection* c);
  bool TakeSlot(Connection* c);
  void Stop();
  void Wake();

  const BlobCache& cache_;
  const std::string key_;
  const BlobServerTimeouts timeouts_;
  std::unordered_set<std::string> allowed_;
  const std::chrono::steady_clock::time_point deadline_;
  UniqueFd listener_;
  UniqueFd wake_;  // an eventfd: the destructor or a connection's progress rouses AcceptLoop
  uint16_t port_ = 0;
  std::string bound_address_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::atomic<uint64_t> blobs_served_{0};
  std::atomic<uint64_t> bytes_served_{0};
  std::mutex mu_;  // guards the connections' phases and serving_
  std::condition_variable slot_freed_;
  size_t serving_ = 0;                                  // connections holding a slot
  std::list<std::unique_ptr<Connection>> connections_;  // AcceptLoop's own
  std::thread acceptor_;
};

struct FetchResult {
  uint64_t blobs = 0;  // fetched, the manifest included when it was fetched too
  uint64_t bytes = 0;
};

// Connects to a peer's BlobServer (`host`: a numeric IP address) and fetches the manifest (unless
// cached; at most kMaxPeerManifestSize bytes), then every content blob of it that `cache` lacks
// (each distinct hash once; symlinks have none), each written through BlobCache::Writer and so
// checked against its hash. One connection, requests pipelined. `timeout` (1 s at least) bounds
// connecting and each read or write. Throws AgentError naming host:port and what failed: refused,
// timeout, bad key, a hash mismatch, the peer refusing or lacking a blob, a manifest too large.
// Blobs committed before a failure stay in the cache (they are whole and checked).
FetchResult FetchBlobs(BlobCache& cache, const std::string& host, uint16_t port,
                       const std::string& key, const std::string& manifest_sha256,
                       std::chrono::seconds timeout);

}  // namespace podrun::agent
