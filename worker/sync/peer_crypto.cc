// The peer link's handshake and frames (see peer_crypto.h).
#include "worker/sync/peer_crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <initializer_list>
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
  std::string input(kMagic);
  input.append(reinterpret_cast<const char*>(client_nonce), kNonceSize);
  input.append(reinterpret_cast<const char*>(server_nonce), kNonceSize);
  input.append(direction);
  SessionKey out{};
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), out.data(),
           &size) == nullptr ||
      size != out.size()) {
    Fail("peer link: HMAC-SHA256 failed");
  }
  return out;
}

}  // namespace

// AES-256-GCM for one direction of one connection; the IV is the frame's number.
class PeerChannel::Cipher {
 public:
  Cipher(const SessionKey& key, bool encrypt) : encrypt_(encrypt), ctx_(EVP_CIPHER_CTX_new()) {
    if (ctx_ == nullptr ||
        EVP_CipherInit_ex(ctx_, EVP_aes_256_gcm(), nullptr, key.data(), nullptr, encrypt) != 1) {
      EVP_CIPHER_CTX_free(ctx_);
      Fail("peer link: cannot initialise AES-256-GCM");
    }
  }
  ~Cipher() { EVP_CIPHER_CTX_free(ctx_); }
  Cipher(const Cipher&) = delete;
  Cipher& operator=(const Cipher&) = delete;

  // Encrypts (or decrypts) `pieces` into `out` in order, authenticating `header` too. Sealing
  // writes the tag to `tag`; opening checks it and returns false when it does not match.
  bool Run(const unsigned char* header, std::initializer_list<std::string_view> pieces,
           unsigned char* out, unsigned char* tag) {
    std::array<unsigned char, kIvSize> iv{};
    for (int i = 0; i < 8; ++i) iv[4 + i] = static_cast<unsigned char>(counter_ >> (56 - 8 * i));
    ++counter_;
    int n = 0;
    if (EVP_CipherInit_ex(ctx_, nullptr, nullptr, nullptr, iv.data(), encrypt_) != 1 ||
        EVP_CipherUpdate(ctx_, nullptr, &n, header, kHeaderSize) != 1) {
      Fail("peer link: AES-256-GCM failed");
    }
    for (std::string_view piece : pieces) {
      if (piece.empty()) continue;
      if (EVP_CipherUpdate(ctx_, out, &n, reinterpret_cast<const unsigned char*>(piece.data()),
                           static_cast<int>(piece.size())) != 1) {
        Fail("peer link: AES-256-GCM failed");
      }
      out += n;
    }
    if (!encrypt_ && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, kTagSize, tag) != 1) {
      Fail("peer link: AES-256-GCM failed");
    }
    if (EVP_CipherFinal_ex(ctx_, out, &n) != 1) return false;
    if (encrypt_ && EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, kTagSize, tag) != 1) {
      Fail("peer link: AES-256-GCM failed");
    }
    return true;
  }

 private:
  bool encrypt_;
  EVP_CIPHER_CTX* ctx_;
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
  if (RAND_bytes(mine.data() + kMagic.size(), kNonceSize) != 1) Fail("peer link: no randomness");
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
  OPENSSL_cleanse(to_server.data(), to_server.size());
  OPENSSL_cleanse(to_client.data(), to_client.size());

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
  send_->Run(header, {std::string_view(&type, 1), payload}, header + kHeaderSize,
             header + kHeaderSize + length);
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
  const std::string_view sealed(reinterpret_cast<const char*>(in_.data()), length);
  if (!receive_->Run(header.data(), {sealed}, in_.data(), in_.data() + length)) {
    Fail("a frame failed to authenticate");
  }
  *type = static_cast<char>(in_[0]);
  *payload = std::string_view(reinterpret_cast<const char*>(in_.data()) + 1, length - 1);
  return true;
}

}  // namespace podrun::agent
