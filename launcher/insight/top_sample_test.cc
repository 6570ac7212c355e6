// Tests of `podrun top`'s arithmetic: CPU and output rates between two samples (only of the
// same running process, never negative), silence by the worker's clock, the state and fields a
// sample gives a row, and the steps the store gives it.
#include "launcher/insight/top_sample.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

AgentTopSample Running(int64_t monotonic_ns, uint64_t cpu_ns, uint64_t output_bytes) {
  AgentTopSample s;
  s.state = AgentJobState::kRunning;
  s.pid = 100;
  s.start_time_ns = 1'700'000'000 * kSecond;
  s.now_ns = s.start_time_ns + 60 * kSecond;
  s.sample_monotonic_ns = monotonic_ns;
  s.cpu_ns = cpu_ns;
  s.output_bytes = output_bytes;
  return s;
}

TEST(TopSampleTest, CpuPercentBetweenTwoSamples) {
  const AgentTopSample a = Running(10 * kSecond, 5 * kSecond, 0);
  // 0.5 s of CPU in 0.5 s: one busy CPU; 1 s in 0.5 s: two.
  EXPECT_DOUBLE_EQ(
      *CpuPercent(a, Running(10 * kSecond + kSecond / 2, 5 * kSecond + kSecond / 2, 0)), 100.0);
  EXPECT_DOUBLE_EQ(*CpuPercent(a, Running(10 * kSecond + kSecond / 2, 6 * kSecond, 0)), 200.0);
  EXPECT_DOUBLE_EQ(*CpuPercent(a, Running(12 * kSecond, 5 * kSecond + kSecond / 4, 0)), 12.5);
  // CPU time that went away with a process counts as none, not as a negative rate.
  EXPECT_DOUBLE_EQ(*CpuPercent(a, Running(11 * kSecond, 4 * kSecond, 0)), 0.0);
  // Not comparable: no time passed, another process, not running, no sample time.
  EXPECT_FALSE(CpuPercent(a, a));
  AgentTopSample other = Running(11 * kSecond, 6 * kSecond, 0);
  other.pid = 101;
  EXPECT_FALSE(CpuPercent(a, other));
  AgentTopSample ended = Running(0, 0, 0);
  ended.state = AgentJobState::kExited;
  EXPECT_FALSE(CpuPercent(a, ended));
  EXPECT_FALSE(CpuPercent(Running(0, 0, 0), Running(kSecond, kSecond, 0)));
}

TEST(TopSampleTest, OutputRate) {
  const AgentTopSample a = Running(10 * kSecond, 0, 1000);
  EXPECT_DOUBLE_EQ(*OutputRate(a, Running(12 * kSecond, 0, 5000)), 2000.0);
  EXPECT_DOUBLE_EQ(*OutputRate(a, Running(12 * kSecond, 0, 1000)), 0.0);
  EXPECT_FALSE(OutputRate(a, a));
}

TEST(TopSampleTest, SilenceByTheWorkersClock) {
  AgentTopSample s = Running(kSecond, 0, 0);
  EXPECT_DOUBLE_EQ(*SilentSeconds(s), 60.0);  // no output yet: since the start
  s.last_output_ns = s.now_ns - 3 * kSecond - kSecond / 2;
  EXPECT_DOUBLE_EQ(*SilentSeconds(s), 3.5);
  s.last_output_ns = s.now_ns + kSecond;  // never negative
  EXPECT_DOUBLE_EQ(*SilentSeconds(s), 0.0);
  s.state = AgentJobState::kExited;
  EXPECT_FALSE(SilentSeconds(s));
}

WorkerRecord Worker(int index) {
  WorkerRecord w;
  w.index = index;
  w.host = "root@10.0.0." + std::to_string(index);
  w.state = WorkerState::kRunning;
  return w;
}

TEST(TopSampleTest, RowOfARunningWorker) {
  AgentTopSample before = Running(10 * kSecond, 2 * kSecond, 100);
  AgentTopSample now = Running(11 * kSecond, 2 * kSecond + kSecond / 2, 300);
  now.rss_bytes = 4096;
  now.processes = 2;
  now.accelerators = {"/dev/accel0"};
  now.last_output_ns = now.now_ns - 2 * kSecond;
  now.last_line = "epoch 3";
  const TopRow row = TopRowOf(Worker(2), now, before);
  EXPECT_EQ(row.worker, 2);
  EXPECT_EQ(row.host, "root@10.0.0.2");
  EXPECT_EQ(row.state, "running");
  EXPECT_FALSE(row.failed);
  EXPECT_EQ(row.pid, 100);
  EXPECT_DOUBLE_EQ(*row.cpu_percent, 50.0);
  EXPECT_DOUBLE_EQ(*row.cpu_seconds, 2.5);
  EXPECT_EQ(row.rss_bytes, 4096u);
  EXPECT_EQ(row.processes, 2u);
  EXPECT_EQ(row.accelerators, std::vector<std::string>{"/dev/accel0"});
  EXPECT_DOUBLE_EQ(*row.output_bytes_per_second, 200.0);
  EXPECT_EQ(row.output_bytes, 300u);
  EXPECT_DOUBLE_EQ(*row.silent_seconds, 2.0);
  EXPECT_EQ(row.last_line, "epoch 3");
  // The first sample: no rates yet.
  EXPECT_FALSE(TopRowOf(Worker(2), now, std::nullopt).cpu_percent);
}

TEST(TopSampleTest, RowsOfEndedMissingAndUnreachableWorkers) {
  AgentTopSample failed;
  failed.state = AgentJobState::kExited;
  failed.pid = 7;
  failed.end = ProcessEnd{};
  failed.end->exit_code = 3;
  failed.last_line = "Traceback";
  TopRow row = TopRowOf(Worker(1), failed, std::nullopt);
  EXPECT_EQ(row.state, "failed");
  EXPECT_TRUE(row.failed);
  EXPECT_EQ(row.exit_code, 3);
  EXPECT_FALSE(row.cpu_percent);
  EXPECT_FALSE(row.rss_bytes);
  EXPECT_FALSE(row.silent_seconds);
  EXPECT_EQ(row.last_line, "Traceback");

  AgentTopSample stopped = failed;
  stopped.end = ProcessEnd{};
  stopped.end->signal = 15;
  stopped.end->stopped_by_request = true;
  row = TopRowOf(Worker(1), stopped, std::nullopt);
  EXPECT_EQ(row.state, "stopped");
  EXPECT_FALSE(row.failed);
  EXPECT_EQ(row.signal, 15);

  WorkerRecord pending = Worker(4);
  pending.state = WorkerState::kPending;
  row = TopRowOf(pending, std::nullopt, std::nullopt);
  EXPECT_EQ(row.state, "pending");
  EXPECT_NE(row.note.find("not started there"), std::string::npos);

  row = UnreachableRow(Worker(5), "ssh connect: timed out");
  EXPECT_EQ(row.state, "unreachable");
  EXPECT_TRUE(row.failed);
  EXPECT_EQ(row.note, "ssh connect: timed out");
}

WorkerProgress Progress(int worker, std::optional<int64_t> step = {},
                        std::optional<double> rate = {},
                        std::optional<StragglerNote> straggler = {}) {
  WorkerProgress p;
  p.worker = worker;
  p.step = step;
  if (step) p.step_ns = *step * 10;
  p.steps_per_s = rate;
  p.straggler = straggler;
  return p;
}

TEST(TopSampleTest, RowsGetTheStoresSteps) {
  std::vector<TopRow> rows(3);
  for (int i = 0; i < 3; ++i) rows[i].worker = 2 - i;
  AddProgress(rows, {Progress(0, 1513, 0.93), Progress(1),
                     Progress(2, 1200, 0.41, StragglerNote{0.41, 0.93})});
  EXPECT_EQ(rows[0].step, 1200);  // w2
  EXPECT_TRUE(rows[0].straggler);
  EXPECT_EQ(rows[0].straggler_note, "0.41 steps/s vs median 0.93");
  EXPECT_FALSE(rows[1].step);  // w1: no step yet
  EXPECT_EQ(rows[2].step, 1513);
  EXPECT_EQ(rows[2].step_ns, 15130);
  EXPECT_EQ(rows[2].steps_per_s, 0.93);
  EXPECT_FALSE(rows[2].straggler);
  // No progress recorded (progress: none): the rows are as they were.
  std::vector<TopRow> plain(2);
  AddProgress(plain, {});
  EXPECT_FALSE(plain[0].step || plain[1].step);
}

}  // namespace
}  // namespace podrun
