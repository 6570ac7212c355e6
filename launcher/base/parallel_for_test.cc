#include "launcher/base/parallel_for.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <vector>

namespace podrun {
namespace {

TEST(ParallelFor, RunsEveryIndexOnce) {
  std::mutex mu;
  std::multiset<size_t> seen;
  ParallelFor(100, [&](size_t i) {
    std::lock_guard lock(mu);
    seen.insert(i);
  });
  ASSERT_EQ(seen.size(), 100u);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
}

TEST(ParallelFor, BoundsItsThreads) {
  std::atomic<int> running{0}, peak{0};
  ParallelFor(
      40,
      [&](size_t) {
        int now = ++running;
        for (int p = peak; now > p && !peak.compare_exchange_weak(p, now);) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        --running;
      },
      4);
  EXPECT_LE(peak.load(), 4);
  EXPECT_GE(peak.load(), 1);
}

TEST(ParallelFor, ZeroItems) {
  bool called = false;
  ParallelFor(0, [&](size_t) { called = true; });
  EXPECT_FALSE(called);
}

// With no thread to be had, every item still runs, on the calling thread. The limit that
// refuses threads (an address space too small for another thread's stack; RLIMIT_NPROC does not
// bind root) is set in a fresh copy of this test binary: a process that has joined threads
// before reuses their cached stacks.
TEST(ParallelFor, NoThreadsLeftStillRunsEverything) {
  if (std::getenv("PODRUN_PARALLEL_FOR_CHILD")) {
    rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    FILE* f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (!f || fscanf(f, "%lu", &pages) != 1) _exit(3);
    fclose(f);
    limit.rlim_cur = pages * 4096 + (2 << 20);
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(4);
    try {  // the precondition: no thread can be made now
      std::thread probe_thread([] {});
      probe_thread.join();
      _exit(5);
    } catch (const std::system_error&) {
    }
    std::atomic<int> count{0};
    ParallelFor(16, [&](size_t) { ++count; });
    _exit(count == 16 ? 0 : 1);
  }
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("PODRUN_PARALLEL_FOR_CHILD", "1", 1);
    execl("/proc/self/exe", "launcher_unit_tests",
          "--gtest_filter=ParallelFor.NoThreadsLeftStillRunsEverything", nullptr);
    _exit(6);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3-4: setup, 5: a thread could still be made, 1: items lost";
}

}  // namespace
}  // namespace podrun
