// The peer link's server and client (see peer_link.h). Requests and replies are PeerChannel
// frames: the client sends kGet frames naming blobs by sha256 (a bounded number ahead of the
// replies); the server answers each, in order, with kRefused and a reason, or kSize and the
// blob's size followed by kData frames of its bytes.
#include "worker/sync/peer_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "proto/agent.pb.h"
#include "worker/base/agent_error.h"
#include "worker/base/tcp_socket.h"
#include "worker/sync/peer_crypto.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kGet = 'G';      // client: sha256 (64 hex digits)
constexpr char kRefused = 'R';  // server: why the blob asked for is not sent
constexpr char kSize = 'S';     // server: the blob's size, 8 bytes big-endian; its data follows
constexpr char kData = 'D';     // server: the next bytes of the blob
constexpr size_t kMaxRequest = 64;
constexpr size_t kPipeline = 16;                  // requests sent ahead of the replies
constexpr std::chrono::seconds kServerStall{30};  // a client silent this long is dropped

// Timeouts on every send and receive (a stalled peer is an error), and no Nagle delay.
void SetSocketOptions(int fd, std::chrono::seconds timeout) {
  const timeval tv{static_cast<time_t>(timeout.count()), 0};
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    throw AgentError(ErrorKind::kInternal, "socket options: " + ErrnoMessage());
  }
}

std::string EncodeSize(uint64_t size) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(size >> (56 - 8 * i));
  return out;
}

uint64_t DecodeSize(std::string_view bytes) {
  uint64_t size = 0;
  for (unsigned char byte : bytes) size = size << 8 | byte;
  return size;
}

// Sends one blob from the cache file in kPeerChunkSize frames; returns its size, or nothing
// when the cache lacks it (and the request was refused).
std::optional<uint64_t> SendBlob(PeerChannel& channel, const BlobCache& cache,
                                 const std::string& sha256, std::vector<char>* buffer) {
  UniqueFd file(::open(cache.PathOf(sha256).c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!file || ::fstat(file.get(), &st) != 0) {
    channel.Send(kRefused, "not in the peer's cache");
    return std::nullopt;
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  channel.Send(kSize, EncodeSize(size));
  buffer->resize(kPeerChunkSize);
  for (uint64_t sent = 0; sent < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer->size(), size - sent));
    const ssize_t n = ::read(file.get(), buffer->data(), want);
    if (n < 0 && errno == EINTR) continue;
    // A file that shrank cannot keep the promise of kSize: end the connection.
    if (n <= 0) throw AgentError(ErrorKind::kInternal, "blob " + sha256 + " ended early");
    channel.Send(kData, std::string_view(buffer->data(), static_cast<size_t>(n)));
    sent += static_cast<uint64_t>(n);
  }
  return size;
}

// Receives the reply to a kGet of `sha256` into the cache (checked against the hash). A blob of
// unknown size (`expected_size` nullopt: the manifest) may have at most kMaxPeerManifestSize bytes.
uint64_t ReceiveBlob(PeerChannel& channel, BlobCache& cache, const std::string& sha256,
                     std::optional<uint64_t> expected_size) {
  char type = 0;
  std::string_view payload;
  if (!channel.Receive(&type, &payload)) {
    throw AgentError(ErrorKind::kInternal, "the peer closed the connection");
  }
  if (type == kRefused) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "the peer refused blob " + sha256 + ": " + std::string(payload));
  }
  if (type != kSize || payload.size() != 8) {
    throw AgentError(ErrorKind::kInternal, "unexpected reply to the request for " + sha256);
  }
  const uint64_t size = DecodeSize(payload);
  if (expected_size && size != *expected_size) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "blob " + sha256 + ": the peer has " + std::to_string(size) +
                         " bytes, the manifest says " + std::to_string(*expected_size));
  }
  if (!expected_size && size > kMaxPeerManifestSize) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "manifest " + sha256 + ": the peer announces " + std::to_string(size) +
                         " bytes, more than a manifest may have (" +
                         std::to_string(kMaxPeerManifestSize >> 20) + " MiB); nothing written");
  }
  BlobCache::Writer writer(cache, sha256);
  while (writer.size() < size) {
    if (!channel.Receive(&type, &payload)) {
      throw AgentError(ErrorKind::kInternal,
                       "the peer closed the connection within blob " + sha256);
    }
    if (type != kData || payload.empty() || payload.size() > size - writer.size()) {
      throw AgentError(ErrorKind::kInternal, "unexpected frame within blob " + sha256);
    }
    writer.Append(payload);
  }
  writer.Commit();
  return size;
}

}  // namespace

// A connection's phase moves forward only: proving the key, then authenticated (serving, or
// waiting for a slot to), then done. One whose handshake outlives its deadline is expired: its
// socket is shut down, which ends its thread's reads.
struct BlobServer::Connection {
  enum class Phase { kHandshake, kAuthenticated, kDone };

  UniqueFd fd;
  std::thread thread;
  Clock::time_point handshake_deadline;
  Phase phase = Phase::kHandshake;  // guarded by mu_, as is `expired`
  bool expired = false;
};

BlobServer::BlobServer(const BlobCache& cache, const std::string& address, std::string key,
                       const std::string& manifest_sha256, std::chrono::seconds lifetime,
                       BlobServerTimeouts timeouts)
    : cache_(cache), key_(std::move(key)), timeouts_(timeouts), deadline_(Clock::now() + lifetime) {
  const std::string where = "serve blobs on " + address;
  if (key_.size() != kPeerKeySize) {
    throw AgentError(ErrorKind::kInvalidArgument, where + ": the key must be 32 bytes");
  }
  if (!cache_.Has(manifest_sha256)) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     where + ": manifest " + manifest_sha256 + " is not in the cache");
  }
  v1::SyncManifest manifest;
  if (!manifest.ParseFromString(cache_.Read(manifest_sha256))) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     where + ": manifest " + manifest_sha256 + " does not parse");
  }
  allowed_.insert(manifest_sha256);
  for (const auto& entry : manifest.entries()) {
    if (entry.symlink().empty()) allowed_.insert(entry.sha256());
  }

  try {
    listener_ = Listen(address, &port_);
    bound_address_ = BoundAddress(listener_.get());
  } catch (const AgentError& e) {
    throw AgentError(e.kind(), where + ": " + e.what());
  }
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_) throw AgentError(ErrorKind::kInternal, where + ": eventfd: " + ErrnoMessage());
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

BlobServer::~BlobServer() {
  Stop();
  acceptor_.join();
}

void BlobServer::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  slot_freed_.notify_all();
  Wake();
}

void BlobServer::Wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t ignored = ::write(wake_.get(), &one, sizeof one);
}

void BlobServer::AcceptLoop() {
  using std::chrono::milliseconds;
  Clock::time_point busy = Clock::now();  // when a connection was last seen open
  for (;;) {
    const Clock::time_point now = Clock::now();
    std::list<std::unique_ptr<Connection>> finished;
    size_t handshaking = 0, authenticated = 0;
    Clock::time_point wake_at = std::min(deadline_, now + std::chrono::seconds(60));
    {
      std::lock_guard lock(mu_);
      for (auto it = connections_.begin(); it != connections_.end();) {
        Connection& c = **it;
        if (c.phase == Connection::Phase::kDone) {
          finished.splice(finished.end(), connections_, it++);
          continue;
        }
        if (c.phase == Connection::Phase::kAuthenticated) {
          ++authenticated;
        } else if (!c.expired && now >= c.handshake_deadline) {
          c.expired = true;
          ::shutdown(c.fd.get(), SHUT_RDWR);
        } else if (!c.expired) {
          ++handshaking;
          wake_at = std::min(wake_at, c.handshake_deadline);
        }
        ++it;
      }
    }
    for (const auto& c : finished) c->thread.join();
    if (!connections_.empty() || !finished.empty()) busy = now;
    if (stop_ || now >= deadline_ || (connections_.empty() && now - busy >= timeouts_.idle)) break;
    if (connections_.empty()) wake_at = std::min(wake_at, busy + timeouts_.idle);

    // Poll the listener only while there is room: more connections wait in the backlog.
    pollfd fds[2] = {{wake_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
    const nfds_t count = handshaking < kMaxHandshakes && authenticated < kMaxConnections ? 2 : 1;
    const auto left = std::chrono::ceil<milliseconds>(wake_at - now);
    const int rc =
        ::poll(fds, count, static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60000)));
    if (rc <= 0) continue;  // a timeout, EINTR (nothing else happens to valid fds)
    if (fds[0].revents & POLLIN) {
      uint64_t value = 0;
      [[maybe_unused]] ssize_t ignored = ::read(wake_.get(), &value, sizeof value);
    }
    if (count < 2 || !(fds[1].revents & POLLIN)) continue;
    UniqueFd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) {
      // The client gave up already; or no fd is left, and it waits in the backlog a while.
      if (errno != EAGAIN && errno != ECONNABORTED && errno != EINTR) {
        std::this_thread::sleep_for(milliseconds(100));
      }
      continue;
    }
    try {
      auto connection = std::make_unique<Connection>();
      connection->fd = std::move(fd);
      connection->handshake_deadline = Clock::now() + timeouts_.handshake;
      Connection* c = connection.get();
      std::lock_guard lock(mu_);  // the thread looks at its phase at once
      c->thread = std::thread([this, c] {
        Serve(c);
        {
          std::lock_guard done(mu_);
          c->phase = Connection::Phase::kDone;
        }
        Wake();
      });
      connections_.push_back(std::move(connection));
    } catch (const std::system_error&) {
      // No thread to be had: this connection is dropped, its client sees it closed.
    }
  }
  listener_.reset();
  Stop();  // wakes connections waiting for a slot
  for (const auto& c : connections_) ::shutdown(c->fd.get(), SHUT_RDWR);
  for (const auto& c : connections_) c->thread.join();
  connections_.clear();
  closed_ = true;
}

// Called once the handshake succeeded: unless the deadline expired it meanwhile, waits for one
// of the kMaxConnections slots (or the server's end). Returns whether it got one.
bool BlobServer::TakeSlot(Connection* c) {
  std::unique_lock lock(mu_);
  if (c->expired) return false;
  c->phase = Connection::Phase::kAuthenticated;
  Wake();  // a handshake slot is free
  slot_freed_.wait(lock, [this] { return stop_ || serving_ < kMaxConnections; });
  if (stop_) return false;
  ++serving_;
  return true;
}

void BlobServer::Serve(Connection* c) {
  bool slot = false;
  try {
    SetSocketOptions(c->fd.get(), kServerStall);
    PeerChannel channel(c->fd.get(), key_, PeerChannel::Role::kServer, kMaxRequest);
    slot = TakeSlot(c);
    std::vector<char> buffer;
    char type = 0;
    std::string_view payload;
    while (slot && !stop_ && channel.Receive(&type, &payload)) {
      if (type != kGet) break;
      const std::string sha256(payload);
      if (!allowed_.contains(sha256)) {
        channel.Send(kRefused, "not part of this transfer");
        continue;
      }
      if (const auto size = SendBlob(channel, cache_, sha256, &buffer)) {
        ++blobs_served_;
        bytes_served_ += *size;
      }
    }
  } catch (const std::exception&) {
    // The connection ends here; the fetcher reports what failed.
  }
  if (slot) {
    {
      std::lock_guard lock(mu_);
      --serving_;
    }
    slot_freed_.notify_one();
  }
}

FetchResult FetchBlobs(BlobCache& cache, const std::string& host, uint16_t port,
                       const std::string& key, const std::string& manifest_sha256,
                       std::chrono::seconds timeout) {
  const std::string peer = HostPort(host, port);
  timeout = std::max(timeout, std::chrono::seconds(1));  // 0 would mean no timeout at all
  try {
    cache.PathOf(manifest_sha256);  // a well-formed hash, before any connection
    UniqueFd fd = Connect(ParseAddress(host, port), timeout);
    SetSocketOptions(fd.get(), timeout);
    PeerChannel channel(fd.get(), key, PeerChannel::Role::kClient, kPeerChunkSize);
    FetchResult result;
    if (!cache.Use(manifest_sha256)) {
      channel.Send(kGet, manifest_sha256);
      result.bytes += ReceiveBlob(channel, cache, manifest_sha256, std::nullopt);
      ++result.blobs;
    }
    v1::SyncManifest manifest;
    if (!manifest.ParseFromString(cache.Read(manifest_sha256))) {
      throw AgentError(ErrorKind::kInvalidArgument,
                       "manifest " + manifest_sha256 + " does not parse");
    }
    std::vector<const v1::ManifestEntry*> wanted;
    std::unordered_set<std::string_view> seen;
    for (const auto& entry : manifest.entries()) {
      if (!entry.symlink().empty() || !seen.insert(entry.sha256()).second) continue;
      if (!cache.Use(entry.sha256())) wanted.push_back(&entry);
    }
    size_t requested = 0;
    for (size_t i = 0; i < wanted.size(); ++i) {
      for (; requested < wanted.size() && requested < i + kPipeline; ++requested) {
        channel.Send(kGet, wanted[requested]->sha256());
      }
      result.bytes += ReceiveBlob(channel, cache, wanted[i]->sha256(), wanted[i]->size());
      ++result.blobs;
    }
    return result;
  } catch (const AgentError& e) {
    throw AgentError(e.kind(), "peer " + peer + ": " + e.what());
  }
}

}  // namespace podrun::agent
