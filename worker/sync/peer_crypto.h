// PeerChannel: the wire of the peer link (worker/sync/peer_link.h). Both ends send a magic string
// and a fresh 32-byte nonce; each direction then gets its own key, HMAC-SHA256(transfer key,
// "podrun-peer v1" || client nonce || server nonce || direction), so no key and IV pair is ever
// used on two connections. Every message is one frame: a 4-byte big-endian length, then the
// AES-256-GCM ciphertext of (type byte, payload) and its 16-byte tag, with the length as
// associated data and the frame's number in its direction as IV. A frame that fails to
// authenticate ends the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace podrun::agent {

inline constexpr size_t kPeerKeySize = 32;

// Frames a blob is cut into on the wire (data bytes per frame, at most).
inline constexpr size_t kPeerChunkSize = 1 << 20;

// One end of an authenticated, encrypted connection over a connected, blocking stream socket
// whose send and receive timeouts the caller has set (a timeout is an error). Not thread-safe.
class PeerChannel {
 public:
  enum class Role { kClient, kServer };

  // Exchanges nonces and a first frame each way over `fd` (not owned). Throws AgentError when
  // the connection fails or the other end does not prove it knows `key` (kPeerKeySize bytes).
  // Frames longer than `max_receive` payload bytes are refused (bounds memory).
  PeerChannel(int fd, std::string_view key, Role role, size_t max_receive);
  ~PeerChannel();
  PeerChannel(const PeerChannel&) = delete;
  PeerChannel& operator=(const PeerChannel&) = delete;

  // Sends one frame. Throws AgentError on a write error or timeout.
  void Send(char type, std::string_view payload);
  // Receives one frame; `payload` stays valid until the next Receive. Returns false when the
  // other end closed the connection between frames; throws AgentError on anything else
  // (timeout, a truncated or oversized frame, one that fails to authenticate).
  bool Receive(char* type, std::string_view* payload);

 private:
  class Cipher;

  int fd_;
  size_t max_receive_;
  std::unique_ptr<Cipher> send_;
  std::unique_ptr<Cipher> receive_;
  std::vector<unsigned char> out_;  // a sealed frame being sent
  std::vector<unsigned char> in_;   // a frame received, opened in place
};

}  // namespace podrun::agent
