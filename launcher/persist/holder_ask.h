// Asking the connection holder (holder_protocol.h): connect to its socket, send one request, read
// its one-line reply. What follows the reply on the connection (an exec's frames, a tunnel's
// bytes) belongs to the caller. Event-loop thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "launcher/persist/holder_protocol.h"

namespace podrun {

namespace asio = boost::asio;

struct HolderAnswer {
  std::unique_ptr<asio::local::stream_protocol::socket> socket;
  HolderReply reply;     // ok
  std::string buffered;  // read past the reply line (never with exact_reply)
};

// Sends `request` to the holder listening at `socket`. nullopt when the holder is not there, went
// away before answering, or answered that it will not serve this (HolderReply::fallback): the
// caller connects on its own, nothing ran. Throws Error(kUnreachable) with the holder's words
// when the worker could not be reached. With `exact_reply`, nothing past the reply line is read
// (a tunnel's bytes are then all the caller's to read).
asio::awaitable<std::optional<HolderAnswer>> AskHolder(const std::filesystem::path& socket,
                                                       const HolderRequest& request,
                                                       bool exact_reply);

}  // namespace podrun
