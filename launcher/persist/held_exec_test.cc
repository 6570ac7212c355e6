// The command's side of the holder's framing, against a stand-in holder on a real unix socket:
// a reader that paces itself (HeldExec::NextFrame) loses nothing to a deadline, and reads the
// frames as they were sent, split anywhere.
#include "launcher/persist/held_exec.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "launcher/base/error.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// A listening unix socket whose one connection a thread serves with `serve` (given the fd).
class StandInHolder {
 public:
  explicit StandInHolder(std::function<void(int)> serve) {
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("held-exec-" + std::to_string(::getpid()) + ".sock");
    std::filesystem::remove(path_);
    listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path_.c_str());
    EXPECT_EQ(0, ::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
    EXPECT_EQ(0, ::listen(listen_, 1));
    thread_ = std::thread([this, serve = std::move(serve)] {
      const int fd = ::accept(listen_, nullptr, nullptr);
      if (fd < 0) return;
      std::string line;
      char c = 0;
      while (::read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);  // the request
      serve(fd);
      ::close(fd);
    });
  }
  ~StandInHolder() {
    thread_.join();
    ::close(listen_);
    std::filesystem::remove(path_);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int listen_ = -1;
  std::thread thread_;
};

void Send(int fd, const std::string& bytes) {
  ASSERT_EQ(static_cast<ssize_t>(bytes.size()),
            ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL));
}

std::string Ok() {
  HolderReply reply;
  reply.ok = true;
  reply.host = "root@10.0.0.5:22";
  return EncodeHolderReply(reply);
}

std::string Frame(FrameType type, const std::string& payload) {
  return FrameHeader(type, payload.size()) + payload;
}

HolderRequest Request() {
  HolderRequest request;
  request.target.host = "10.0.0.5";
  request.command = "stream-log";
  return request;
}

// Starts an exec through the stand-in `holder` and returns what `read` makes of it ("no holder"
// when none answered).
std::string ReadHeld(const StandInHolder& holder,
                     const std::function<boost::asio::awaitable<std::string>(HeldExec&)>& read) {
  boost::asio::io_context io;
  auto result = boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<std::string> {
        std::optional<HeldExec> held = co_await HeldExec::Start(holder.path(), Request());
        if (!held) co_return "no holder";
        co_return co_await read(*held);
      },
      boost::asio::use_future);
  io.run();
  return result.get();
}

TEST(HeldExecTest, ADeadlineLosesNothingAndFramesSplitAnywhereArriveWhole) {
  StandInHolder holder([](int fd) {
    // The reply and half a frame at once; the rest after the reader's first deadline.
    const std::string out = Frame(FrameType::kStdout, std::string(60000, 'x'));
    Send(fd, Ok() + out.substr(0, 3));
    std::this_thread::sleep_for(300ms);
    Send(fd, out.substr(3, 40000));
    std::this_thread::sleep_for(50ms);
    Send(fd, out.substr(40003) + Frame(FrameType::kStderr, "err") +
                 Frame(FrameType::kExit, EncodeExitStatus(ExitStatus{3, ""})));
  });
  const std::string said =
      ReadHeld(holder, [](HeldExec& held) -> boost::asio::awaitable<std::string> {
        std::string seen;
        int timeouts = 0;
        for (;;) {
          auto frame = co_await held.NextFrame(Clock::now() + 100ms);
          if (!frame) {
            ++timeouts;
            continue;
          }
          seen += std::string(1, static_cast<char>(frame->type)) + ":" +
                  std::to_string(frame->payload.size()) + " ";
          if (frame->type == FrameType::kStdout && frame->payload != std::string(60000, 'x')) {
            co_return "a changed payload";
          }
          if (frame->type == FrameType::kExit) {
            co_return seen + "exit " + std::to_string(*DecodeExitStatus(frame->payload).exit_code) +
                (timeouts > 0 ? " after a timeout" : " with no timeout");
          }
        }
      });
  EXPECT_EQ("o:60000 e:3 x:15 exit 3 after a timeout", said);
}

TEST(HeldExecTest, AHolderGoneMidFrameIsAnError) {
  StandInHolder holder(
      [](int fd) { Send(fd, Ok() + FrameHeader(FrameType::kStdout, 10) + "abc"); });
  const std::string said =
      ReadHeld(holder, [](HeldExec& held) -> boost::asio::awaitable<std::string> {
        try {
          for (;;) co_await held.NextFrame(Clock::now() + 5s);
        } catch (const Error& e) {
          co_return e.what();
        }
      });
  EXPECT_NE(std::string::npos, said.find("root@10.0.0.5:22: connection holder went away")) << said;
}

}  // namespace
}  // namespace podrun
