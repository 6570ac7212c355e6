// The peer link's handshake and frames (see peer_crypto.h).
#include "worker/sync/peer_crypto.h"

#include <nettle/gcm.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <string>

#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

constexpr std::string_view kMagic = "podrun-peer v1";
constexpr size_t kNonceSize = 32;
constexpr size_t kHeaderSize = 4;
constexpr size_t kTagSize = 16;
constexpr size_t kIvSize = 12;
constexpr char kHello = 'A';

using SessionKey = std::array<unsigned char, 32>;

[[noreturn]] void Fail(const std::string& what) { throw AgentError(ErrorKind::kInternal, what); }

[[noreturn]] void FailIo(const std::string& what) {
  if (errno == EAGAIN || errno == EWOULDBLOCK) Fail(what + ": timed out");
  Fail(what + ": " + std::strerror(errno));
}

void SendAll(int fd, const unsigned char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      FailIo("send");
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads until `size` bytes or end of stream; returns how many were read.
size_t ReceiveAll(int fd, unsigned char* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, data + got, size - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      FailIo("receive");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

SessionKey DeriveKey(std::string_view key, const unsigned char* client_nonce,
                     const unsigned char* server_nonce, std::string_view direction) {
  hmac_sha256_ctx hmac;
  hmac_sha256_set_key(&hmac, key.size(), reinterpret_cast<const uint8_t*>(key.data()));
  hmac_sha256_update(&hmac, kMagic.size(), reinterpret_cast<const uint8_t*>(kMagic.data()));
  hmac_sha256_update(&hmac, kNonceSize, client_nonce);
  hmac_sha256_update(&hmac, kNonceSize, server_nonce);
  hmac_sha256_update(&hmac, direction.size(), reinterpret_cast<const uint8_t*>(direction.data()));
  SessionKey out{};
  hmac_sha256_digest(&hmac, out.size(), out.data());
  explicit_bzero(&hmac, sizeof hmac);
  return out;
}

void RandomBytes(unsigned char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::getrandom(data, size, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(std::string("peer link: no randomness: ") + std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

// AES-256-GCM (Nettle's) for one direction of one connection; the IV is the frame's number.
class PeerChannel::Cipher {
 public:
  Cipher(const SessionKey& key, bool encrypt) : encrypt_(encrypt) {
    gcm_aes256_set_key(&ctx_, key.data());
  }
  ~Cipher() { explicit_bzero(&ctx_, sizeof ctx_); }
  Cipher(const Cipher&) = delete;
  Cipher& operator=(const Cipher&) = delete;

  // Encrypts (or decrypts) `size` bytes at `data` in place, authenticating `header` too.
  // Sealing writes the tag to `tag`; opening checks it and returns false when it does not match.
  bool Run(const unsigned char* header, unsigned char* data, size_t size, unsigned char* tag) {
    std::array<unsigned char, kIvSize> iv{};
    for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<unsigned char>(counter_ >> (56 - 8 * i));
    ++counter_;
    gcm_aes256_set_iv(&ctx_, iv.size(), iv.data());
    gcm_aes256_update(&ctx_, kHeaderSize, header);
    if (encrypt_) {
      gcm_aes256_encrypt(&ctx_, size, data, data);
      gcm_aes256_digest(&ctx_, kTagSize, tag);
      return true;
    }
    gcm_aes256_decrypt(&ctx_, size, data, data);
    std::array<unsigned char, kTagSize> expected{};
    gcm_aes256_digest(&ctx_, expected.size(), expected.data());
    return memeql_sec(expected.data(), tag, kTagSize) != 0;
  }

 private:
  bool encrypt_;
  gcm_aes256_ctx ctx_{};
  uint64_t counter_ = 0;
};

PeerChannel::PeerChannel(int fd, std::string_view key, Role role, size_t max_receive)
    : fd_(fd), max_receive_(max_receive) {
  if (key.size() != kPeerKeySize) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "peer link: the key must be " + std::to_string(kPeerKeySize) + " bytes");
  }
  std::array<unsigned char, kMagic.size() + kNonceSize> mine{}, theirs{};
  std::memcpy(mine.data(), kMagic.data(), kMagic.size());
  RandomBytes(mine.data() + kMagic.size(), kNonceSize);
  SendAll(fd_, mine.data(), mine.size());
  if (ReceiveAll(fd_, theirs.data(), theirs.size()) != theirs.size()) {
    Fail("the peer closed the connection during the handshake");
  }
  if (std::memcmp(theirs.data(), kMagic.data(), kMagic.size()) != 0) {
    Fail("the other end does not speak " + std::string(kMagic));
  }
  const bool client = role == Role::kClient;
  const unsigned char* client_nonce = (client ? mine : theirs).data() + kMagic.size();
  const unsigned char* server_nonce = (client ? theirs : mine).data() + kMagic.size();
  SessionKey to_server = DeriveKey(key, client_nonce, server_nonce, "client->server");
  SessionKey to_client = DeriveKey(key, client_nonce, server_nonce, "server->client");
  send_ = std::make_unique<Cipher>(client ? to_server : to_client, true);
  receive_ = std::make_unique<Cipher>(client ? to_client : to_server, false);
  explicit_bzero(to_server.data(), to_server.size());
  explicit_bzero(to_client.data(), to_client.size());

  // A first frame each way proves both ends hold the key before any request is made.
  Send(kHello, {});
  char type = 0;
  std::string_view payload;
  try {
    if (!Receive(&type, &payload)) Fail("the peer closed the connection during the handshake");
  } catch (const AgentError& e) {
    Fail(std::string("authentication failed (the peer does not hold this transfer's key): ") +
         e.what());
  }
  if (type != kHello) Fail("peer link: unexpected first frame");
}

PeerChannel::~PeerChannel() = default;

void PeerChannel::Send(char type, std::string_view payload) {
  const size_t length = 1 + payload.size();
  out_.resize(kHeaderSize + length + kTagSize);
  unsigned char* header = out_.data();
  for (int i = 0; i < 4; ++i) header[i] = static_cast<unsigned char>(length >> (24 - 8 * i));
  unsigned char* body = header + kHeaderSize;
  body[0] = static_cast<unsigned char>(type);
  if (!payload.empty()) std::memcpy(body + 1, payload.data(), payload.size());
  send_->Run(header, body, length, body + length);
  SendAll(fd_, out_.data(), out_.size());
}

bool PeerChannel::Receive(char* type, std::string_view* payload) {
  std::array<unsigned char, kHeaderSize> header{};
  const size_t got = ReceiveAll(fd_, header.data(), header.size());
  if (got == 0) return false;
  if (got != header.size()) Fail("the peer closed the connection within a frame");
  size_t length = 0;
  for (unsigned char byte : header) length = length << 8 | byte;
  if (length == 0 || length > max_receive_ + 1) {
    Fail("a frame of " + std::to_string(length) + " bytes (at most " +
         std::to_string(max_receive_ + 1) + " expected)");
  }
  in_.resize(length + kTagSize);
  if (ReceiveAll(fd_, in_.data(), in_.size()) != in_.size()) {
    Fail("the peer closed the connection within a frame");
  }
  if (!receive_->Run(header.data(), in_.data(), length, in_.data() + length)) {
    Fail("a frame failed to authenticate");
  }
  *type = static_cast<char>(in_[0]);
  *payload = std::string_view(reinterpret_cast<const char*>(in_.data()) + 1, length - 1);
  return true;
}

}  // namespace podrun::agent
