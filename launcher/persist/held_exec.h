// An exec run through the connection holder, as a command sees it: one connection to the
// holder's socket per worker, the request sent, the reply read, then the command's output and
// exit status as the holder frames them (holder_protocol.h). Event-loop thread only.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/base/exit_status.h"
#include "launcher/base/stream.h"
#include "launcher/persist/holder_protocol.h"

namespace podrun {

namespace asio = boost::asio;

class HeldExec {
 public:
  using OnData = std::function<void(Stream, std::string_view)>;

  // Asks the holder listening at `socket` to run `request`. Returns once the command runs on
  // the worker. nullopt when the holder is not there, went away before answering, or answered
  // that it will not serve this (HolderReply::fallback): the caller connects on its own,
  // nothing ran. Throws Error(kUnreachable) with the holder's words when the worker could not
  // be reached (they are the words a connection of the command's own would have had: a changed
  // host key refused, a timeout, an authentication refused).
  static asio::awaitable<std::optional<HeldExec>> Start(const std::filesystem::path& socket,
                                                        const HolderRequest& request);

  HeldExec(HeldExec&&) noexcept = default;
  HeldExec& operator=(HeldExec&&) noexcept = default;
  ~HeldExec();

  // "user@address:port" of the worker's connection.
  const std::string& description() const { return description_; }
  // True when the holder ran it on a kept connection.
  bool reused() const { return reused_; }

  // Delivers the command's output to on_data as it comes, then returns its exit status. Throws
  // Error(kUnreachable) when the connection to the worker was lost (the holder's words) or the
  // holder itself went away.
  asio::awaitable<ExitStatus> Drain(const OnData& on_data);

  // Drain's parts, for a reader that paces itself (a log stream that stops reading while its
  // records wait, and notices silence): the next frame as the holder sent it, or nullopt when
  // `deadline` came first (nothing is lost: the next call reads on). Throws Error(kUnreachable)
  // when the holder went away or sent a malformed frame. The payload is valid until the next
  // call: it is where the socket's bytes were read to, not a copy.
  struct Frame {
    FrameType type;
    std::string_view payload;
  };
  asio::awaitable<std::optional<Frame>> NextFrame(std::chrono::steady_clock::time_point deadline);

 private:
  HeldExec(std::unique_ptr<asio::local::stream_protocol::socket> socket, std::string buffered,
           std::string description, bool reused);

  // The complete frame at the start of what was read, taken; nullopt if none is complete.
  std::optional<Frame> TakeFrame();
  // Room for a read of at least kReadBytes after what was read and not taken.
  void MakeRoom();

  std::unique_ptr<asio::local::stream_protocol::socket> socket_;
  // What was read from the socket (first what came past the reply line): [begin_, end_) is not
  // taken yet. Not zero-filled: the socket's bytes are read straight into it.
  std::unique_ptr<char[]> buffer_;
  size_t capacity_ = 0;
  size_t begin_ = 0;
  size_t end_ = 0;
  std::string description_;
  bool reused_ = false;
};

}  // namespace podrun
