// The fan-out window.
#include "launcher/ssh/fan_out.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace podrun {

FanOutWindow::Slot& FanOutWindow::Slot::operator=(Slot&& other) noexcept {
  if (this != &other) {
    Release();
    window_ = other.window_;
    other.window_ = nullptr;
  }
  return *this;
}

void FanOutWindow::Slot::Release() {
  if (window_ != nullptr) window_->ReleaseOne();
  window_ = nullptr;
}

FanOutWindow::FanOutWindow(asio::any_io_executor executor, int size)
    : executor_(std::move(executor)), size_(size < 1 ? 1 : size) {}

asio::awaitable<FanOutWindow::Slot> FanOutWindow::Acquire() {
  if (active_ < size_) {
    ++active_;
    co_return Slot(this);
  }
  auto timer =
      std::make_shared<asio::steady_timer>(executor_, asio::steady_timer::time_point::max());
  waiters_.push_back(timer);
  boost::system::error_code ec;
  co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  co_return Slot(this);  // the releaser handed its place over: active_ is unchanged
}

void FanOutWindow::ReleaseOne() {
  if (!waiters_.empty()) {
    auto next = waiters_.front();
    waiters_.pop_front();
    next->cancel();
    return;
  }
  --active_;
}

}  // namespace podrun
