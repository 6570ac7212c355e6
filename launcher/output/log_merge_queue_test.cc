// Unit tests of LogMergeQueue: time order across workers, bounded queues, cancel.
#include "launcher/output/log_merge_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace podrun {
namespace {

std::vector<LogRecord> Batch(int64_t first_time, int n, int64_t step) {
  std::vector<LogRecord> batch;
  for (int i = 0; i < n; ++i) {
    LogRecord r;
    r.time_ns = first_time + i * step;
    r.data = std::to_string(r.time_ns) + "\n";
    batch.push_back(r);
  }
  return batch;
}

TEST(LogMergeQueue, MergesInTimeOrderWithBoundedQueues) {
  LogMergeQueue queue({0, 1});
  std::atomic<size_t> max_ahead{0};
  std::atomic<int> pushed[2] = {0, 0};
  std::atomic<int> taken{0};
  auto produce = [&](int w, int64_t offset) {
    for (int b = 0; b < 50; ++b) {
      ASSERT_TRUE(queue.Push(w, Batch(offset + b * 100, 10, 10)));  // times offset+0..+990*
      ++pushed[w];
      // `taken` is read last and may have grown past the pushes read before it: signed.
      const int64_t ahead = int64_t{pushed[0] + pushed[1]} * 10 - taken;
      if (ahead > 0 && static_cast<size_t>(ahead) > max_ahead)
        max_ahead = static_cast<size_t>(ahead);
    }
    queue.End(w);
  };
  std::thread a(produce, 0, 0);
  std::thread b(produce, 1, 5);
  std::vector<int64_t> times;
  int ended = 0;
  queue.Drain(
      [&](int, const LogRecord& r) {
        times.push_back(r.time_ns);
        ++taken;
      },
      [&](int) { ++ended; });
  a.join();
  b.join();
  EXPECT_EQ(2, ended);
  ASSERT_EQ(1000u, times.size());
  EXPECT_TRUE(std::is_sorted(times.begin(), times.end()));
  // Never much more than (kMaxQueuedBatches + 1) batches per worker were held.
  EXPECT_LE(max_ahead.load(), 2 * (LogMergeQueue::kMaxQueuedBatches + 2) * 10);
}

// Worker 1's clock runs 1 s ahead: merged by the launcher's clock, its records interleave with
// worker 0's instead of all coming after them.
TEST(LogMergeQueue, MergesByTheLauncherClock) {
  LogMergeQueue queue({0, 1}, {{1, 1'000'000'000}});
  std::thread a([&] {
    queue.Push(0, Batch(0, 5, 10));  // 0, 10, 20, 30, 40
    queue.End(0);
  });
  std::thread b([&] {
    queue.Push(1, Batch(1'000'000'005, 5, 10));  // 5, 15, ... in the launcher's clock
    queue.End(1);
  });
  std::vector<int> order;
  queue.Drain([&](int w, const LogRecord&) { order.push_back(w); }, [](int) {});
  a.join();
  b.join();
  EXPECT_EQ((std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0, 1}), order);
}

TEST(LogMergeQueue, CancelReleasesBlockedProducers) {
  LogMergeQueue queue({0, 1});
  std::thread producer([&] {
    while (queue.Push(0, Batch(0, 1, 1))) {
    }
    queue.End(0);
  });
  queue.End(1);
  int records = 0;
  queue.Drain(
      [&](int, const LogRecord&) {
        if (++records == 5) queue.Cancel();
      },
      [](int) {});
  producer.join();
  EXPECT_EQ(5, records);
}

}  // namespace
}  // namespace podrun
