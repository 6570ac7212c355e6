// The launcher's one event loop: an io_context on its own thread, where every SSH session,
// channel and tunnel lives (docs/design.md decision 2). Other threads (gRPC calls, the command's
// main thread) hand work to it with Run().
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <thread>

namespace podrun {

namespace asio = boost::asio;

class EventLoop {
 public:
  EventLoop();
  // Stops the loop and joins its thread; pending work is abandoned.
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  asio::io_context::executor_type executor() { return context_.get_executor(); }

  // Runs `work` on the loop and blocks the calling thread until it finishes; rethrows its
  // exception. Must not be called from the loop's own thread.
  template <class T>
  T Run(asio::awaitable<T> work) {
    return asio::co_spawn(context_, std::move(work), asio::use_future).get();
  }

 private:
  asio::io_context context_{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  std::thread thread_;
};

}  // namespace podrun
