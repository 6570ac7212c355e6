// Tests of the fan-out window with fake clients: never more than N in their setup at once,
// every waiting client eventually let in, in arrival order.
#include "launcher/ssh/fan_out.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <vector>

namespace podrun {
namespace {

struct Counts {
  int in_flight = 0;
  int max_in_flight = 0;
  int finished = 0;
  std::vector<int> order;  // the order in which clients got in
};

// A fake client: holds a place in the window for `hold`, as a connection setup would.
asio::awaitable<void> Client(FanOutWindow& window, Counts& counts, int id,
                             std::chrono::microseconds hold) {
  FanOutWindow::Slot slot = co_await window.Acquire();
  counts.order.push_back(id);
  ++counts.in_flight;
  counts.max_in_flight = std::max(counts.max_in_flight, counts.in_flight);
  asio::steady_timer timer(co_await asio::this_coro::executor, hold);
  co_await timer.async_wait(asio::use_awaitable);
  --counts.in_flight;
  ++counts.finished;
}

TEST(FanOutWindow, NeverMoreThanNInFlight) {
  for (int size : {1, 3, 8}) {
    asio::io_context io;
    FanOutWindow window(io.get_executor(), size);
    Counts counts;
    constexpr int kClients = 40;
    for (int i = 0; i < kClients; ++i) {
      // Varied hold times, so that clients finish out of order.
      auto hold = std::chrono::microseconds(100 + (i * 37) % 900);
      asio::co_spawn(io, Client(window, counts, i, hold), asio::detached);
    }
    io.run();
    EXPECT_EQ(kClients, counts.finished) << "window " << size;
    EXPECT_EQ(size, counts.max_in_flight) << "window " << size;  // full, never over
    EXPECT_EQ(0, window.active());
    EXPECT_EQ(0, window.waiting());
    // Waiters are let in first come, first served.
    for (int i = 0; i < kClients; ++i) EXPECT_EQ(i, counts.order[i]);
  }
}

TEST(FanOutWindow, ReleasingEarlyLetsTheNextIn) {
  asio::io_context io;
  FanOutWindow window(io.get_executor(), 1);
  int got_in = 0;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        FanOutWindow::Slot slot = co_await window.Acquire();
        ++got_in;
        FanOutWindow::Slot moved = std::move(slot);  // a moved slot releases once
        moved.Release();
        moved.Release();
        asio::steady_timer t(io, std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
        EXPECT_EQ(2, got_in);  // the second got in while this one still runs
      },
      asio::detached);
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        FanOutWindow::Slot slot = co_await window.Acquire();
        ++got_in;
        EXPECT_EQ(1, window.active());
      },
      asio::detached);
  io.run();
  EXPECT_EQ(2, got_in);
  EXPECT_EQ(0, window.active());
}

TEST(FanOutWindow, SizeBelowOneMeansOne) {
  asio::io_context io;
  FanOutWindow window(io.get_executor(), 0);
  Counts counts;
  for (int i = 0; i < 5; ++i) {
    asio::co_spawn(io, Client(window, counts, i, std::chrono::microseconds(100)), asio::detached);
  }
  io.run();
  EXPECT_EQ(5, counts.finished);
  EXPECT_EQ(1, counts.max_in_flight);
}

}  // namespace
}  // namespace podrun
