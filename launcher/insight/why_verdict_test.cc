#include "launcher/insight/why_verdict.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

constexpr int64_t kS = 1'000'000'000;

AgentProcessReport Process(int pid, const std::string& command, AgentProcessState state,
                           const std::string& wchan, uint32_t threads, double cpu) {
  AgentProcessReport p;
  p.pid = pid;
  p.command = command;
  p.cmdline = command;
  p.state = state;
  p.wchan = wchan;
  p.syscall = wchan.empty() ? "" : "futex";
  p.threads = threads;
  p.cpu_percent = cpu;
  return p;
}

WorkerWhy Worker(int index, int64_t step, int64_t step_ns, const std::string& wchan,
                 int64_t silent_s, int64_t now_ns) {
  WorkerWhy w;
  w.worker = index;
  w.description = "w" + std::to_string(index) + " (h" + std::to_string(index) + ")";
  w.progress.worker = index;
  w.progress.step = step;
  w.progress.step_ns = step_ns;
  AgentWhyReport r;
  r.state = AgentJobState::kRunning;
  r.now_ns = now_ns;
  r.last_output_ns = now_ns - silent_s * kS;
  r.processes.push_back(
      Process(4000 + index, "bash", AgentProcessState::kSleeping, "do_wait", 1, 0));
  r.processes.push_back(
      Process(4240 + index, "python3", AgentProcessState::kSleeping, wchan, 12, 0));
  w.report = r;
  return w;
}

TEST(WhyVerdictTest, TheWorkerBehindComesFirstWithItsStepProcessWaitAndTime) {
  const int64_t now = 10000 * kS;
  WhyReport report;
  report.job_id = "j1";
  report.attempt = 1;
  for (int i = 0; i < 4; ++i) {
    report.workers.push_back(
        i == 2 ? Worker(2, 1512, now - 432 * kS, "futex_wait_queue", 432, now)
               : Worker(i, 1513, now - 431 * kS, "futex_wait_queue", 431 - i, now));
  }
  MakeVerdict(report, now);
  ASSERT_EQ(4u, report.verdict.size());
  EXPECT_EQ(
      "w2: suspect: step 1512 (others 1513), python3 pid 4242 in futex_wait_queue 7m12s, "
      "CPU 0%",
      report.verdict[0].text);
  EXPECT_TRUE(report.verdict[0].suspect);
  for (size_t i = 1; i < 4; ++i) EXPECT_FALSE(report.verdict[i].suspect) << report.verdict[i].text;
  // Then the longest silent: w0 (431 s), w1, w3.
  EXPECT_EQ(0, report.verdict[1].worker);
  EXPECT_EQ(3, report.verdict[3].worker);
  const std::string text = WhyText(report);
  EXPECT_NE(text.find("1 suspect first"), std::string::npos) << text;
  EXPECT_EQ(0u, text.find("why: job j1 attempt 1: 4 workers")) << text;
  const nlohmann::json j = WhyJson(report);
  EXPECT_EQ(2, j["verdict"][0]["worker"]);
  EXPECT_EQ("futex_wait_queue", j["workers"][2]["processes"][1]["wchan"]);
}

TEST(WhyVerdictTest, AtOneStepTheWorkerWhoseStateDiffersIsTheSuspect) {
  const int64_t now = 5000 * kS;
  WhyReport report;
  for (int i = 0; i < 4; ++i)
    report.workers.push_back(Worker(i, 7, now - 60 * kS, "futex_wait_queue", 60, now));
  // w3 spins: running, 100% CPU.
  auto& p = report.workers[3].report->processes[1];
  p.state = AgentProcessState::kRunning;
  p.wchan.clear();
  p.cpu_percent = 100;
  // w1 cannot be reached.
  report.workers[1].report.reset();
  report.workers[1].error = "agent Why: UNAVAILABLE";
  MakeVerdict(report, now);
  EXPECT_EQ("w1: suspect: step 7, unreachable: agent Why: UNAVAILABLE", report.verdict[0].text);
  EXPECT_EQ("w3: suspect: step 7, python3 pid 4243 running 1m00s, CPU 100%",
            report.verdict[1].text);
  EXPECT_FALSE(report.verdict[2].suspect);
}

TEST(WhyVerdictTest, NoStepsAndOneStateMeansNoSuspectAndTheLongestSilentFirst) {
  const int64_t now = 5000 * kS;
  WhyReport report;
  for (int i = 0; i < 3; ++i) {
    WorkerWhy w = Worker(i, 0, 0, "hrtimer_nanosleep", 10 * (i + 1), now);
    w.progress.step.reset();
    w.progress.step_ns.reset();
    report.workers.push_back(w);
  }
  MakeVerdict(report, now);
  EXPECT_EQ("w2: python3 pid 4242 in hrtimer_nanosleep 30s, CPU 0%", report.verdict[0].text);
  EXPECT_NE(WhyText(report).find("no worker stands out"), std::string::npos);
}

TEST(WhyVerdictTest, ShortDurations) {
  EXPECT_EQ("42s", ShortDuration(42.9));
  EXPECT_EQ("7m12s", ShortDuration(432));
  EXPECT_EQ("3h05m", ShortDuration(3 * 3600 + 5 * 60 + 7));
  EXPECT_EQ("0s", ShortDuration(-3));
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(WhyVerdictTest, OnlyTheFirstWorkersOfTheVerdictKeepTheirStacks) {
  const int64_t now = 100 * kS;
  WhyReport report;
  for (int i = 0; i < 3; ++i) {
    WorkerWhy w = Worker(i, i == 1 ? 4 : 5, now - 10 * kS, "futex_wait_queue", 10, now);
    for (auto& p : w.report->processes) p.stack = "#0 somewhere";
    report.workers.push_back(w);
  }
  MakeVerdict(report, now);
  ASSERT_EQ(1, report.verdict[0].worker);  // behind: first
  KeepStacksOf(report, 1);
  EXPECT_EQ("#0 somewhere", report.workers[1].report->processes[1].stack);
  for (int i : {0, 2}) {
    for (const auto& p : report.workers[i].report->processes) {
      EXPECT_TRUE(p.stack.empty());
      EXPECT_NE(p.stack_error.find("not kept"), std::string::npos) << p.stack_error;
    }
  }
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

// A process's name, command line and stack are the program's own text: on the terminal they
// are shown escaped (ESC as ^[), so none can move the cursor, set a title or ring a bell.
TEST(WhyVerdictTest, CommandsCommandLinesAndStacksAreEscaped) {
  const int64_t now = 100 * kS;
  WhyReport report;
  report.workers.push_back(Worker(0, 5, now - 10 * kS, "futex_wait_queue", 10, now));
  AgentProcessReport& p = report.workers[0].report->processes[1];
  p.command = "py\x1b]0;owned\x07";
  p.cmdline = "python3 \x1b[2Jtrain.py";
  p.stack = "#0 f\x1b]52;c;AAAA\x07\n#1 g\r\n";
  p.stack_tool = "gdb";
  report.workers[0].report->processes_left_out = 3;
  MakeVerdict(report, now);
  const std::string text = WhyText(report);
  EXPECT_EQ(std::string::npos, text.find('\x1b')) << text;
  EXPECT_EQ(std::string::npos, text.find('\x07')) << text;
  EXPECT_NE(std::string::npos, text.find("py^[]0;owned^G")) << text;
  EXPECT_NE(std::string::npos, text.find("python3 ^[[2Jtrain.py")) << text;
  EXPECT_NE(std::string::npos, text.find("#0 f^[]52;c;AAAA^G")) << text;
  EXPECT_EQ(std::string::npos, report.verdict[0].text.find('\x1b')) << report.verdict[0].text;
  EXPECT_NE(std::string::npos, text.find("3 more processes not shown")) << text;
  // The JSON keeps what the worker said, the state as a word.
  const nlohmann::json j = WhyJson(report);
  EXPECT_EQ("sleeping", j["workers"][0]["processes"][1]["state"]);
  EXPECT_EQ(p.command, j["workers"][0]["processes"][1]["command"]);
  EXPECT_EQ(3, j["workers"][0]["processes_left_out"]);
}

}  // namespace
}  // namespace podrun
