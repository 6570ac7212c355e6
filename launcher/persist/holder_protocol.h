// What a command and the connection holder (holder_server.h) say to each other over the
// holder's unix socket (docs/decisions.md, "Warm connections"). One connection carries one request:
// the command sends one JSON line (HolderRequest), the holder answers one JSON line (HolderReply),
// then, for an exec it accepted, frames: the command's stdout and stderr as they come, and last
// its exit status or why the connection was lost. Both sides are podrun of one build or of
// builds that agree on kHolderProtocolVersion; a holder that does not understand a request
// answers `fallback`, and the command connects on its own as if there were no holder.
// A tunnel request (an agent's gRPC, HolderRequest::Kind::kTunnel) is answered by the same reply
// line, after which the connection carries the tunnel's bytes both ways, unframed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/base/exit_status.h"
#include "launcher/pod/host_list.h"
#include "launcher/ssh/ssh_options.h"

namespace podrun {

// Bumped when either side's messages change meaning; a mismatch is a fallback, never an error.
inline constexpr int kHolderProtocolVersion = 2;
// The longest request or reply line either side reads.
inline constexpr size_t kHolderMaxLine = size_t{64} << 10;
// The longest frame payload the holder sends.
inline constexpr size_t kHolderMaxFrame = size_t{64} << 10;

// One exec asked of the holder: run `command` on `target` with the pod's SSH settings; or one
// tunnel: a channel to the unix socket `socket_path` on `target` (an agent's), or, when the server
// refuses stream-local forwarding, to `command`'s stdio (`podrun-agent dial-stdio`).
struct HolderRequest {
  enum class Kind { kExec, kTunnel };
  Kind kind = Kind::kExec;
  HostSpec target;
  SshOptions ssh;
  std::string command;
  std::string socket_path;  // kTunnel only
  // How long a session stays kept after its last use (PODRUN_PERSIST_SECONDS of the command).
  std::chrono::seconds persist{600};
  // The command's SSH_AUTH_SOCK and HOME: the holder serves only commands whose keys it would
  // find where they would (the same ssh-agent, the same default key files); others fall back.
  std::string auth_sock;
  std::string home;
};

// The holder's one-line answer before any frame.
struct HolderReply {
  bool ok = false;          // the command runs; frames follow
  bool fallback = false;    // not ok: the holder will not serve this; connect without it
  std::string host;         // ok: "user@address:port" of the connection (SshSession::description)
  std::string address;      // ok: the address connected to (SshSession::address)
  bool reused = false;      // ok: on a kept connection (no handshake)
  bool dial_stdio = false;  // ok, a tunnel: through `command`, the server refused forwarding
  std::string error;        // not ok, not fallback: why the worker is unreachable, as a
                            // connection of the command's own would have said it
};

// Encodes as one JSON line ending in '\n'.
std::string EncodeHolderRequest(const HolderRequest& request);
std::string EncodeHolderReply(const HolderReply& reply);
// Decodes a line (without its '\n'). Throws std::runtime_error on a malformed line or another
// protocol version.
HolderRequest DecodeHolderRequest(std::string_view line);
HolderReply DecodeHolderReply(std::string_view line);

// What a kept session may be reused for: the target as written and every setting that decides
// where the connection goes and what it trusts or presents (user, port, identity, ssh_config,
// known_hosts, strictness, jump hosts), and its keepalive interval. Two requests with the same
// key may share a session; any difference gets a session of its own.
std::string SessionKey(const HolderRequest& request);
// The settings part of SessionKey without the target: the sessions whose jump host connections
// may be shared.
std::string SettingsKey(const SshOptions& options);

// A frame after an accepted exec: a type byte, the payload's length (4 bytes, big-endian), the
// payload.
enum class FrameType : char {
  kStdout = 'o',
  kStderr = 'e',
  kExit = 'x',  // the last frame: the exit status (EncodeExitStatus)
  kLost = 'l',  // the last frame: the connection broke; the payload says how
};
inline constexpr size_t kFrameHeaderBytes = 5;

// The 5-byte header of a frame of `length` bytes.
std::string FrameHeader(FrameType type, size_t length);
// Reads a frame header; nullopt when the type byte is unknown or the length over
// kHolderMaxFrame.
struct FrameInfo {
  FrameType type;
  size_t length;
};
std::optional<FrameInfo> ParseFrameHeader(std::string_view header);

// An exit status as a kExit payload and back (throws std::runtime_error on a malformed one).
std::string EncodeExitStatus(const ExitStatus& status);
ExitStatus DecodeExitStatus(std::string_view payload);

}  // namespace podrun
