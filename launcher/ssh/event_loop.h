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

// An io_context for a loop run on the calling thread (exec's), whose coroutines refer to objects
// of the caller's. When run() returns early (stopped on Ctrl-C), their suspended frames are
// still held by the context, and ~io_context would destroy them last of all, after what they
// refer to. DestroyPending() destroys them at a chosen point instead; see PendingFramesGuard.
class LocalLoop : public asio::io_context {
 public:
  LocalLoop() : asio::io_context(1) {}

  // Destroys every pending handler and suspended coroutine frame now; call once run() has
  // returned. The loop cannot run again after; its I/O objects may still be destroyed after.
  void DestroyPending() { shutdown(); }
};

// Calls loop.DestroyPending() when it goes out of scope. Declared after everything the loop's
// coroutines refer to (and after the loop), it is destroyed before them: their frames go first.
class PendingFramesGuard {
 public:
  explicit PendingFramesGuard(LocalLoop& loop) : loop_(loop) {}
  ~PendingFramesGuard() { loop_.DestroyPending(); }
  PendingFramesGuard(const PendingFramesGuard&) = delete;
  PendingFramesGuard& operator=(const PendingFramesGuard&) = delete;

 private:
  LocalLoop& loop_;
};

}  // namespace podrun
