// One command's connection to the holder, served: its request read, a kept (or new) session
// leased, the exec channel opened on it and its output, then its exit status, sent back as
// frames (holder_protocol.h). A kept session that does not answer the channel's opening in
// kReuseAnswer (its server vanished without a word) is forgotten and the worker connected
// afresh, before anything was asked to run. A tunnel (an agent's gRPC) is joined to the
// command's connection instead, unframed. Event-loop thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <string>

#include "launcher/persist/kept_sessions.h"

namespace podrun {

// How long a kept session has to answer a channel's opening (one round trip).
inline constexpr auto kReuseAnswer = std::chrono::seconds(3);

// What of the holder's own environment a request must match to be served (holder_protocol.h,
// HolderRequest::auth_sock, home).
struct HolderEnvironment {
  std::string auth_sock;
  std::string home;
};

// Serves `socket` to its end (the command's). Never throws: whatever goes wrong is said to the
// command (a reply or a last frame) or, when it cannot be, ends the connection. `log` receives
// one line per noteworthy event (a connection made, refused or lost).
asio::awaitable<void> ServeHolderConnection(asio::local::stream_protocol::socket socket,
                                            KeptSessions& sessions,
                                            const HolderEnvironment& environment,
                                            void (*log)(const std::string& line));

}  // namespace podrun
