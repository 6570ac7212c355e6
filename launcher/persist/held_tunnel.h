// A tunnel to a worker's agent through the connection holder (docs/decisions.md, "Warm
// connections"): the holder opens the channel on its kept session and joins it to this command's
// connection, whose socket then carries the agent's gRPC as a tunnel of the command's own would.
// Event-loop thread only (Open); the fd it gives may be used anywhere.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <optional>
#include <string>

#include "launcher/persist/holder_protocol.h"

namespace podrun {

namespace asio = boost::asio;

struct HeldTunnel {
  int fd = -1;              // the command's end, non-blocking; the caller owns it
  std::string description;  // "user@address:port" of the connection
  std::string address;      // the address connected to (SshSession::address)
  bool reused = false;      // on a kept connection (no handshake)
  bool dial_stdio = false;  // through `podrun-agent dial-stdio`: the server refused forwarding
};

// Asks the holder at `socket` for a tunnel to `request.socket_path` on `request.target`
// (request.kind must be kTunnel; request.command is the dial-stdio command). nullopt when the
// holder cannot serve it (absent, gone, refused): the caller connects on its own. Throws
// Error(kUnreachable) with the holder's words when the worker could not be reached.
asio::awaitable<std::optional<HeldTunnel>> OpenHeldTunnel(const std::filesystem::path& socket,
                                                          const HolderRequest& request);

}  // namespace podrun
