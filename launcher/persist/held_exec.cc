// The command's side of an exec through the holder.
#include "launcher/persist/held_exec.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <cstring>

#include "launcher/base/error.h"
#include "launcher/persist/holder_ask.h"

namespace podrun {
namespace {

using Socket = asio::local::stream_protocol::socket;

// One read from the holder's socket takes up to this much: a frame (kHolderMaxFrame). The
// buffer, one per stream, stays under two of them (at 200 workers, 26 MB of streams).
constexpr size_t kReadBytes = kHolderMaxFrame;

}  // namespace

HeldExec::HeldExec(std::unique_ptr<Socket> socket, std::string buffered, std::string description,
                   bool reused)
    : socket_(std::move(socket)), description_(std::move(description)), reused_(reused) {
  capacity_ = std::max(buffered.size(), kReadBytes);
  buffer_ = std::make_unique_for_overwrite<char[]>(capacity_);
  std::memcpy(buffer_.get(), buffered.data(), buffered.size());
  end_ = buffered.size();
}

HeldExec::~HeldExec() = default;

asio::awaitable<std::optional<HeldExec>> HeldExec::Start(const std::filesystem::path& path,
                                                         const HolderRequest& request) {
  std::optional<HolderAnswer> answer = co_await AskHolder(path, request, /*exact_reply=*/false);
  if (!answer) co_return std::nullopt;
  co_return HeldExec(std::move(answer->socket), std::move(answer->buffered), answer->reply.host,
                     answer->reply.reused);
}

asio::awaitable<ExitStatus> HeldExec::Drain(const OnData& on_data) {
  for (;;) {
    std::optional<Frame> frame = co_await NextFrame(std::chrono::steady_clock::time_point::max());
    if (!frame) continue;  // no deadline: not reached
    switch (frame->type) {
      case FrameType::kStdout:
        on_data(Stream::kStdout, frame->payload);
        break;
      case FrameType::kStderr:
        on_data(Stream::kStderr, frame->payload);
        break;
      case FrameType::kLost:
        throw Error(ExitCode::kUnreachable, std::string(frame->payload));
      case FrameType::kExit:
        try {
          co_return DecodeExitStatus(frame->payload);
        } catch (const std::exception& e) {
          throw Error(ExitCode::kUnreachable,
                      fmt::format("{}: connection holder went away: {}", description_, e.what()));
        }
    }
  }
}

std::optional<HeldExec::Frame> HeldExec::TakeFrame() {
  const size_t have = end_ - begin_;
  if (have < kFrameHeaderBytes) return std::nullopt;
  const char* at = buffer_.get() + begin_;
  std::optional<FrameInfo> info = ParseFrameHeader(std::string_view(at, kFrameHeaderBytes));
  if (!info) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: connection holder went away: a malformed frame", description_));
  }
  if (have - kFrameHeaderBytes < info->length) return std::nullopt;
  begin_ += kFrameHeaderBytes + info->length;
  return Frame{info->type, std::string_view(at + kFrameHeaderBytes, info->length)};
}

void HeldExec::MakeRoom() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (capacity_ - end_ >= kReadBytes) return;
  // The frame not taken yet moves to the front; a bigger buffer only if it has to (a frame is
  // at most kHolderMaxFrame, so the buffer stays under two reads and a frame).
  const size_t have = end_ - begin_;
  if (have + kReadBytes > capacity_) {
    capacity_ = have + kReadBytes;
    auto bigger = std::make_unique_for_overwrite<char[]>(capacity_);
    std::memcpy(bigger.get(), buffer_.get() + begin_, have);
    buffer_ = std::move(bigger);
  } else {
    std::memmove(buffer_.get(), buffer_.get() + begin_, have);
  }
  begin_ = 0;
  end_ = have;
}

asio::awaitable<std::optional<HeldExec::Frame>> HeldExec::NextFrame(
    std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (std::optional<Frame> frame = TakeFrame()) co_return frame;
    MakeRoom();
    const auto room = asio::buffer(buffer_.get() + end_, capacity_ - end_);
    boost::system::error_code ec;
    size_t n = 0;
    if (deadline == std::chrono::steady_clock::time_point::max()) {
      n = co_await socket_->async_read_some(room, asio::redirect_error(asio::use_awaitable, ec));
    } else {
      // A read that the deadline's timer cancels takes nothing: what came stays in the socket.
      // The timer's handler may run after the read completed: it cancels only a read still
      // pending.
      struct Race {
        bool pending = true;
        bool timed_out = false;
      };
      auto race = std::make_shared<Race>();
      asio::steady_timer timer(socket_->get_executor());
      timer.expires_at(deadline);
      Socket* socket = socket_.get();
      timer.async_wait([race, socket](boost::system::error_code wait_ec) {
        if (wait_ec || !race->pending) return;
        race->timed_out = true;
        socket->cancel();
      });
      n = co_await socket_->async_read_some(room, asio::redirect_error(asio::use_awaitable, ec));
      race->pending = false;
      timer.cancel();
      if (ec == asio::error::operation_aborted && race->timed_out) {
        end_ += n;
        co_return std::nullopt;
      }
    }
    end_ += n;
    if (ec) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: connection holder went away: {}", description_, ec.message()));
    }
  }
}

}  // namespace podrun
