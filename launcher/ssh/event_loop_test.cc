#include "launcher/ssh/event_loop.h"

#include <gtest/gtest.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>
#include <vector>

namespace podrun {
namespace {

// Something a coroutine refers to; says when it is destroyed.
struct Referent {
  std::vector<std::string>& events;
  bool alive = true;
  ~Referent() {
    alive = false;
    events.push_back("referent destroyed");
  }
};

// A local of a coroutine frame that uses its referent when destroyed (as a FanOutWindow::Slot
// releases its window).
struct UsesReferentOnDestruction {
  Referent& referent;
  ~UsesReferentOnDestruction() {
    referent.events.push_back(referent.alive ? "frame destroyed" : "frame used a dead referent");
  }
};

asio::awaitable<void> WaitForever(asio::steady_timer& timer, Referent& referent) {
  UsesReferentOnDestruction local{referent};
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// What `exec` does on Ctrl-C: the loop is stopped with a coroutine suspended, and the function
// returns. The guard destroys the frame before the objects it refers to (a plain io_context
// destroys it last, after them: "frame used a dead referent"); the timer, declared before the
// guard, is destroyed after it.
TEST(LocalLoop, GuardDestroysSuspendedFramesBeforeWhatTheyReferTo) {
  std::vector<std::string> events;
  {
    LocalLoop loop;
    asio::steady_timer timer(loop, asio::steady_timer::time_point::max());
    Referent referent{events};
    PendingFramesGuard frames(loop);
    asio::co_spawn(loop, WaitForever(timer, referent), asio::detached);
    loop.poll();  // the coroutine runs up to its wait
    ASSERT_TRUE(events.empty());
    loop.stop();
  }
  EXPECT_EQ(events, (std::vector<std::string>{"frame destroyed", "referent destroyed"}));
}

}  // namespace
}  // namespace podrun
