// The command's side of an exec through the holder.
#include "launcher/persist/held_exec.h"

#include <fmt/format.h>

#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>

#include "launcher/base/error.h"
#include "launcher/persist/holder_ask.h"

namespace podrun {
namespace {

using Socket = asio::local::stream_protocol::socket;

}  // namespace

HeldExec::HeldExec(std::unique_ptr<Socket> socket, std::string buffered, std::string description,
                   bool reused)
    : socket_(std::move(socket)),
      buffered_(std::move(buffered)),
      description_(std::move(description)),
      reused_(reused) {}

HeldExec::~HeldExec() = default;

asio::awaitable<std::optional<HeldExec>> HeldExec::Start(const std::filesystem::path& path,
                                                         const HolderRequest& request) {
  std::optional<HolderAnswer> answer = co_await AskHolder(path, request, /*exact_reply=*/false);
  if (!answer) co_return std::nullopt;
  co_return HeldExec(std::move(answer->socket), std::move(answer->buffered), answer->reply.host,
                     answer->reply.reused);
}

asio::awaitable<ExitStatus> HeldExec::Drain(const OnData& on_data) {
  auto holder_gone = [&](const std::string& why) {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: connection holder went away: {}", description_, why));
  };
  std::string payload;
  for (;;) {
    boost::system::error_code ec;
    if (buffered_.size() < kFrameHeaderBytes) {
      const size_t have = buffered_.size();
      buffered_.resize(kFrameHeaderBytes);
      co_await asio::async_read(*socket_,
                                asio::buffer(buffered_.data() + have, kFrameHeaderBytes - have),
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) throw holder_gone(ec.message());
    }
    std::optional<FrameInfo> frame =
        ParseFrameHeader(std::string_view(buffered_).substr(0, kFrameHeaderBytes));
    if (!frame) throw holder_gone("a malformed frame");
    payload = buffered_.substr(kFrameHeaderBytes, frame->length);
    buffered_.erase(0, std::min(buffered_.size(), kFrameHeaderBytes + frame->length));
    if (payload.size() < frame->length) {
      const size_t have = payload.size();
      payload.resize(frame->length);
      co_await asio::async_read(*socket_, asio::buffer(payload.data() + have, frame->length - have),
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) throw holder_gone(ec.message());
    }
    switch (frame->type) {
      case FrameType::kStdout:
        on_data(Stream::kStdout, payload);
        break;
      case FrameType::kStderr:
        on_data(Stream::kStderr, payload);
        break;
      case FrameType::kLost:
        throw Error(ExitCode::kUnreachable, payload);
      case FrameType::kExit:
        try {
          co_return DecodeExitStatus(payload);
        } catch (const std::exception& e) {
          throw holder_gone(e.what());
        }
    }
  }
}

}  // namespace podrun

namespace podrun {

asio::awaitable<std::optional<HeldExec::Frame>> HeldExec::NextFrame(
    std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    if (buffered_.size() >= kFrameHeaderBytes) {
      std::optional<FrameInfo> info =
          ParseFrameHeader(std::string_view(buffered_).substr(0, kFrameHeaderBytes));
      if (!info) {
        throw Error(
            ExitCode::kUnreachable,
            fmt::format("{}: connection holder went away: a malformed frame", description_));
      }
      if (buffered_.size() >= kFrameHeaderBytes + info->length) {
        Frame frame{info->type, buffered_.substr(kFrameHeaderBytes, info->length)};
        buffered_.erase(0, kFrameHeaderBytes + info->length);
        co_return frame;
      }
    }
    // A read that the deadline's timer cancels takes nothing: what came stays in the socket.
    // The timer's handler may run after the read completed: it cancels only a read still pending.
    struct Race {
      bool pending = true;
      bool timed_out = false;
    };
    auto race = std::make_shared<Race>();
    asio::steady_timer timer(socket_->get_executor());
    timer.expires_at(deadline);
    Socket* socket = socket_.get();
    timer.async_wait([race, socket](boost::system::error_code ec) {
      if (ec || !race->pending) return;
      race->timed_out = true;
      socket->cancel();
    });
    char chunk[64 * 1024];
    boost::system::error_code ec;
    const size_t n = co_await socket_->async_read_some(
        asio::buffer(chunk), asio::redirect_error(asio::use_awaitable, ec));
    race->pending = false;
    timer.cancel();
    buffered_.append(chunk, n);
    if (ec == asio::error::operation_aborted && race->timed_out) co_return std::nullopt;
    if (ec) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: connection holder went away: {}", description_, ec.message()));
    }
  }
}

}  // namespace podrun
