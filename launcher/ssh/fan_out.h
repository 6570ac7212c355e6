// The fan-out window (ClusterShell's model): at most N workers are in their connection setup at
// once; each that finishes its setup lets the next waiting worker start. Event-loop thread only.
// The window must outlive every Slot taken from it and every suspended Acquire(): a Slot points
// at its window, and releasing it after the window is gone touches freed memory. Owners declare
// the window before (so it is destroyed after) whatever holds slots (AgentConnections, exec).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <memory>

namespace podrun {

namespace asio = boost::asio;

class FanOutWindow {
 public:
  // A held place in the window; destroying it (or Release()) lets the next waiter in.
  class Slot {
   public:
    Slot() = default;
    explicit Slot(FanOutWindow* window) : window_(window) {}
    Slot(Slot&& other) noexcept : window_(other.window_) { other.window_ = nullptr; }
    Slot& operator=(Slot&& other) noexcept;
    ~Slot() { Release(); }
    void Release();

   private:
    FanOutWindow* window_ = nullptr;
  };

  FanOutWindow(asio::any_io_executor executor, int size);

  // Waits until fewer than `size` slots are held, then holds one.
  asio::awaitable<Slot> Acquire();

  int active() const { return active_; }
  int waiting() const { return static_cast<int>(waiters_.size()); }

 private:
  void ReleaseOne();

  asio::any_io_executor executor_;
  int size_;
  int active_ = 0;
  std::deque<std::shared_ptr<asio::steady_timer>> waiters_;
};

}  // namespace podrun
