// One request to the holder and its reply line.
#include "launcher/persist/holder_ask.h"

#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using Socket = asio::local::stream_protocol::socket;

// Reads up to and with the first '\n', one byte at a time: nothing after it is taken.
asio::awaitable<std::optional<std::string>> ReadLineExactly(Socket& socket) {
  std::string line;
  char c = 0;
  while (line.size() < kHolderMaxLine) {
    boost::system::error_code ec;
    co_await asio::async_read(socket, asio::buffer(&c, 1),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    line.push_back(c);
    if (c == '\n') co_return line;
  }
  co_return std::nullopt;
}

}  // namespace

asio::awaitable<std::optional<HolderAnswer>> AskHolder(const std::filesystem::path& path,
                                                       const HolderRequest& request,
                                                       bool exact_reply) {
  auto executor = co_await asio::this_coro::executor;
  auto socket = std::make_unique<Socket>(executor);
  boost::system::error_code ec;
  co_await socket->async_connect(asio::local::stream_protocol::endpoint(path.string()),
                                 asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return std::nullopt;  // gone (a stale socket): the next command starts another
  const std::string line = EncodeHolderRequest(request);
  co_await asio::async_write(*socket, asio::buffer(line),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (ec) co_return std::nullopt;
  std::string buffer;
  size_t n = 0;
  if (exact_reply) {
    std::optional<std::string> got = co_await ReadLineExactly(*socket);
    if (!got) co_return std::nullopt;
    buffer = std::move(*got);
    n = buffer.size();
  } else {
    n = co_await asio::async_read_until(*socket, asio::dynamic_buffer(buffer, kHolderMaxLine), '\n',
                                        asio::redirect_error(asio::use_awaitable, ec));
    // A holder that went away before answering (it was exiting, idle, as this connected) had
    // not read the request: nothing ran.
    if (ec) co_return std::nullopt;
  }
  HolderAnswer answer;
  try {
    answer.reply = DecodeHolderReply(std::string_view(buffer).substr(0, n - 1));
  } catch (const std::exception&) {
    co_return std::nullopt;
  }
  if (answer.reply.fallback) co_return std::nullopt;
  if (!answer.reply.ok) throw Error(ExitCode::kUnreachable, answer.reply.error);
  answer.socket = std::move(socket);
  answer.buffered = buffer.substr(n);
  co_return answer;
}

}  // namespace podrun
