// Integration tests of the commands that work on a recorded job from any terminal: `podrun logs`
// (-f, -w, --fold, --no-prefix), `status`, `stop` and `ls`, on --local workers (no testpod); and
// the workers' steps as `status`, `ls` and `top` show them.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"
#include "tests/run_command.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 3;

std::string Home() { return ::testing::TempDir() + "/podrun-commands-test-home"; }

// A marker unique to this test run, for finding the job's processes with pgrep.
std::string Marker(const std::string& what) {
  return "podrun-cmdtest-" + what + "-" + std::to_string(::getpid());
}

std::string Podrun() {
  return "env PODRUN_HOME=" + Home() + " PODRUN_AGENT=" + PODRUN_AGENT + " " + PODRUN_BINARY;
}

std::string WriteSpec(const std::string& name, const std::string& run) {
  std::string path = ::testing::TempDir() + "/podrun-cmdtest-" + name + ".yaml";
  std::ofstream(path) << "name: " << name << "\nrun: |\n" << run;
  return path;
}

// Launches `spec` on --local workers; returns the job id (empty on failure, output logged).
std::string Launch(const std::string& spec, const std::string& extra = "") {
  CommandResult r = RunCommand(Podrun() + " launch " + spec + " --local " +
                               std::to_string(kWorkers) + " " + extra);
  std::smatch m;
  if (!std::regex_search(r.output, m, std::regex("job: ([0-9a-f-]+)"))) {
    ADD_FAILURE() << "launch printed no job id: " << r.output;
    return "";
  }
  EXPECT_EQ(0, r.exit_code) << r.output;
  return m[1];
}

// Polls CountProcesses(marker) until it is `want` or `timeout` has passed; returns the last count
// (processes end a moment after the command that ended them returned).
int WaitForProcessCount(const std::string& marker, int want,
                        std::chrono::seconds timeout = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int count = CountProcesses(marker);
  while (count != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    count = CountProcesses(marker);
  }
  return count;
}

int Count(const std::string& text, const std::string& pattern) {
  std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

// The "line N" numbers each worker printed, in the order printed; fails on any other line.
// A line may end with " at NANOSECONDS" (the worker's clock when it printed it).
std::map<int, std::vector<int>> NumberedLines(const std::string& output) {
  std::map<int, std::vector<int>> lines;
  std::istringstream in(output);
  std::regex line_re(R"(\[w(\d+)\] line (\d+)(?: at \d+)?)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, line_re)) {
      ADD_FAILURE() << "unexpected line: " << line;
      continue;
    }
    lines[std::stoi(m[1])].push_back(std::stoi(m[2]));
  }
  return lines;
}

class CommandsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { RunCommand("rm -rf " + Home()); }
  static void TearDownTestSuite() { KillLocalAgents(Home()); }
};

TEST_F(CommandsTest, FollowPrintsEveryLineOnceInOrderAndEndsWithTheJob) {
  constexpr int kLines = 50;
  // Each line carries the time it was printed (the --local workers share this machine's clock).
  std::string job = Launch(
      WriteSpec("numbered", "  for i in $(seq 1 " + std::to_string(kLines) +
                                "); do echo \"line $i at $(date +%s%N)\"; sleep 0.04; done\n"),
      "-d");
  ASSERT_FALSE(job.empty());

  CommandResult status = RunCommand(Podrun() + " status " + job, /*merge_stderr=*/false);
  EXPECT_EQ(0, status.exit_code) << status.output;
  for (int i = 0; i < kWorkers; ++i) {  // a row per worker in state running
    EXPECT_EQ(1,
              Count(status.output, "(^|\\n)w" + std::to_string(i) + R"(\s+localhost\s+running\s)"))
        << "w" << i << "\n"
        << status.output;
  }

  CommandResult follow = RunCommand(Podrun() + " logs " + job + " -f", /*merge_stderr=*/false);
  EXPECT_EQ(0, follow.exit_code) << follow.output;
  std::map<int, std::vector<int>> followed = NumberedLines(follow.output);
  std::vector<int> expected;
  for (int i = 1; i <= kLines; ++i) expected.push_back(i);
  ASSERT_EQ(static_cast<size_t>(kWorkers), followed.size()) << follow.output;
  for (auto& [w, numbers] : followed) EXPECT_EQ(expected, numbers) << "worker " << w;

  // Afterwards, without -f: the same lines, merged in time order across the workers: each
  // line's print time is at least that of every line before it, give or take the moment between
  // `date` and the agent reading the line (generous, for two loaded cores). A worker's whole log
  // after another's would go back by about the job's run time (over 2 s).
  constexpr auto kTolerance = std::chrono::milliseconds(700);
  CommandResult read = RunCommand(Podrun() + " logs " + job, /*merge_stderr=*/false);
  EXPECT_EQ(0, read.exit_code) << read.output;
  EXPECT_EQ(followed, NumberedLines(read.output));
  std::istringstream merged(read.output);
  std::regex timed(R"(\[w(\d+)\] line \d+ at (\d+))");
  long long latest_ns = 0;
  int lines = 0;
  std::set<int> workers_in_first_half;
  for (std::string line; std::getline(merged, line); ++lines) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, timed)) << line;
    const long long at_ns = std::stoll(m[2]);
    EXPECT_GE(at_ns, latest_ns - std::chrono::nanoseconds(kTolerance).count())
        << "line " << lines << " out of time order: " << line << "\n"
        << read.output;
    latest_ns = std::max(latest_ns, at_ns);
    if (lines < kWorkers * kLines / 2) workers_in_first_half.insert(std::stoi(m[1]));
  }
  EXPECT_EQ(kWorkers * kLines, lines);
  // Interleaved: every worker has lines in the first half of the merged log.
  EXPECT_EQ(static_cast<size_t>(kWorkers), workers_in_first_half.size()) << read.output;

  // -w keeps pod-wide indexes.
  CommandResult one = RunCommand(Podrun() + " logs " + job + " -w 2", /*merge_stderr=*/false);
  EXPECT_EQ(0, one.exit_code);
  std::map<int, std::vector<int>> only_w2 = NumberedLines(one.output);
  ASSERT_EQ(1u, only_w2.size()) << one.output;
  EXPECT_EQ(expected, only_w2[2]);

  status = RunCommand(Podrun() + " status " + job + " --json", /*merge_stderr=*/false);
  EXPECT_EQ(0, status.exit_code);
  EXPECT_EQ(kWorkers, Count(status.output, R"("state":"exited")")) << status.output;
  EXPECT_EQ(1, Count(status.output, R"("state":"succeeded")")) << status.output;
}

TEST_F(CommandsTest, FoldPrintsLinesOfAllWorkersOnceAndStderrApart) {
  std::string job = Launch(WriteSpec("folded",
                                     "  echo same\n"
                                     "  echo \"id $PODRUN_WORKER_ID\"\n"
                                     "  echo oops >&2\n"
                                     "  echo done\n"));
  ASSERT_FALSE(job.empty());
  CommandResult folded = RunCommand(Podrun() + " logs " + job + " --fold 2>/dev/null", false);
  EXPECT_EQ(0, folded.exit_code);
  EXPECT_EQ("[w0-2] same\n[w0] id 0\n[w1] id 1\n[w2] id 2\n[w0-2] done\n", folded.output);

  CommandResult errors = RunCommand(Podrun() + " logs " + job + " --fold 2>&1 >/dev/null");
  EXPECT_EQ("[w0-2] oops\n", errors.output);

  // By name, only some workers, no prefix.
  CommandResult plain =
      RunCommand(Podrun() + " logs folded -w 1-2 --fold --no-prefix 2>/dev/null", false);
  EXPECT_EQ(0, plain.exit_code);
  EXPECT_EQ("same\nid 1\nid 2\ndone\n", plain.output);

  CommandResult unfolded = RunCommand(Podrun() + " logs folded -w 0 2>/dev/null", false);
  EXPECT_EQ("[w0] same\n[w0] id 0\n[w0] done\n", unfolded.output);
}

TEST_F(CommandsTest, FollowingAFailedJobExits1) {
  std::string job = Launch(WriteSpec("failing",
                                     "  echo hello\n"
                                     "  sleep 0.5\n"
                                     "  test $PODRUN_WORKER_ID != 1\n"),
                           "-d");
  ASSERT_FALSE(job.empty());
  CommandResult follow = RunCommand(Podrun() + " logs " + job + " -f");
  EXPECT_EQ(1, follow.exit_code) << follow.output;
  EXPECT_EQ(kWorkers, Count(follow.output, R"(\[w\d\] hello)")) << follow.output;
  EXPECT_NE(std::string::npos, follow.output.find("w1: exit code 1")) << follow.output;
  CommandResult status = RunCommand(Podrun() + " status failing", false);
  EXPECT_EQ(1, Count(status.output, R"(w1\s+localhost\s+failed\s+1 )")) << status.output;
}

TEST_F(CommandsTest, StopEndsALongJobEverywhere) {
  std::string marker = Marker("sleeper");
  std::string job = Launch(WriteSpec("sleeper",
                                     "  echo started\n"
                                     "  exec -a " +
                                         marker + " sleep 300\n"),
                           "-d");
  ASSERT_FALSE(job.empty());
  EXPECT_EQ(kWorkers, WaitForProcessCount(marker, kWorkers));

  CommandResult stop = RunCommand(Podrun() + " stop " + job + " --grace 5");
  EXPECT_EQ(0, stop.exit_code) << stop.output;
  EXPECT_EQ(kWorkers, Count(stop.output, R"(podrun: w\d \(local\): stopped)")) << stop.output;
  EXPECT_EQ(0, WaitForProcessCount(marker, 0));

  CommandResult status = RunCommand(Podrun() + " status " + job, false);
  EXPECT_EQ(0, status.exit_code);
  EXPECT_EQ(kWorkers, Count(status.output, R"(localhost\s+stopped)")) << status.output;
  EXPECT_EQ(1, Count(status.output, "attempt 1: stopped")) << status.output;

  CommandResult again = RunCommand(Podrun() + " stop " + job);
  EXPECT_EQ(0, again.exit_code) << again.output;
  EXPECT_NE(std::string::npos, again.output.find("nothing to stop")) << again.output;
}

TEST_F(CommandsTest, LsListsJobsNewestFirst) {
  std::string first = Launch(WriteSpec("ls-one", "  true\n"));
  std::string second = Launch(WriteSpec("ls-two", "  true\n"));
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  CommandResult ls = RunCommand(Podrun() + " ls", false);
  EXPECT_EQ(0, ls.exit_code);
  EXPECT_EQ(0u, ls.output.find("ID ")) << ls.output;
  size_t at_first = ls.output.find(first);
  size_t at_second = ls.output.find(second);
  ASSERT_NE(std::string::npos, at_first) << ls.output;
  ASSERT_NE(std::string::npos, at_second) << ls.output;
  EXPECT_LT(at_second, at_first) << ls.output;
  EXPECT_TRUE(
      std::regex_search(ls.output, std::regex(second + R"(\s+ls-two\s+local:3\s+succeeded\s+1 )")))
      << ls.output;

  CommandResult json = RunCommand(Podrun() + " ls --json", false);
  EXPECT_EQ(0, json.exit_code);
  EXPECT_EQ('[', json.output.front()) << json.output;
  EXPECT_NE(std::string::npos, json.output.find("\"id\":\"" + second + "\"")) << json.output;

  // Without JOB, status shows the latest job.
  CommandResult status = RunCommand(Podrun() + " status", false);
  EXPECT_NE(std::string::npos, status.output.find("job " + second)) << status.output;
}

TEST_F(CommandsTest, UnknownJobsAndBadWorkerListsAreUsageErrors) {
  for (const char* command : {"logs", "status", "stop"}) {
    CommandResult r = RunCommand(Podrun() + " " + command + " no-such-job");
    EXPECT_EQ(2, r.exit_code) << command << ": " << r.output;
    EXPECT_NE(std::string::npos, r.output.find("podrun: no job 'no-such-job'")) << r.output;
  }
  std::string job = Launch(WriteSpec("workers", "  true\n"));
  ASSERT_FALSE(job.empty());
  CommandResult r = RunCommand(Podrun() + " logs " + job + " -w 7");
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_EQ(0u, r.output.find("podrun: ")) << r.output;
}

// The workers' steps: a job whose workers print "step N" (the default progress: pattern) up to
// 5, 6 and 7 shows each worker's step in `status` and `top` and the step every worker reached (5)
// in `ls`; a job with `progress: none` shows no step column at all. Then a straggler note and a
// hang report are written into the job store directly, as the gang's progress watch and stall
// watch write them (their own tests make them): what is tested here is what the commands show
// of what is stored.
TEST_F(CommandsTest, StepsInStatusLsAndTop) {
  const std::string job = Launch(WriteSpec("steps",
                                           "  for i in $(seq 1 $((5 + PODRUN_WORKER_ID))); do\n"
                                           "    echo \"step $i loss 0.5\"; sleep 0.02\n"
                                           "  done\n"));
  ASSERT_FALSE(job.empty());
  const std::string none_spec = ::testing::TempDir() + "/podrun-cmdtest-nosteps.yaml";
  std::ofstream(none_spec) << "name: nosteps\nprogress: none\nrun: |\n  echo step 3\n";
  const std::string no_steps = Launch(none_spec);
  ASSERT_FALSE(no_steps.empty());

  CommandResult status = RunCommand(Podrun() + " status " + job + " --json", false);
  ASSERT_EQ(0, status.exit_code) << status.output;
  nlohmann::json j = nlohmann::json::parse(status.output);
  const int attempt = j["attempt"]["number"].get<int>();
  EXPECT_FALSE(j["attempt"].contains("hang_report")) << status.output;
  ASSERT_EQ(j["workers"].size(), static_cast<size_t>(kWorkers)) << status.output;
  for (const nlohmann::json& w : j["workers"]) {
    EXPECT_EQ(w["step"], 5 + w["worker"].get<int>()) << w.dump();
    EXPECT_TRUE(w["step_ns"].is_number_integer()) << w.dump();
    EXPECT_TRUE(w["straggler"].is_null()) << w.dump();
  }
  status = RunCommand(Podrun() + " status " + job, false);
  EXPECT_TRUE(std::regex_search(status.output, std::regex(R"(\n\s*WORKER .* STEP +NOTE)")))
      << status.output;
  EXPECT_TRUE(std::regex_search(status.output, std::regex(R"(\nw2 .* 7 \([0-9]+(ms|s) ago\))")))
      << status.output;

  CommandResult ls = RunCommand(Podrun() + " ls --json", false);
  ASSERT_EQ(0, ls.exit_code) << ls.output;
  std::map<std::string, nlohmann::json> jobs;
  for (const nlohmann::json& o : nlohmann::json::parse(ls.output))
    jobs[o["id"].get<std::string>()] = o;
  EXPECT_EQ(jobs[job]["step"], 5) << ls.output;  // the step every worker has reached
  EXPECT_TRUE(jobs[no_steps]["step"].is_null()) << ls.output;
  ls = RunCommand(Podrun() + " ls", false);
  EXPECT_TRUE(std::regex_search(ls.output, std::regex(job + R"(\s+steps\s.*\s5\s)"))) << ls.output;
  EXPECT_TRUE(std::regex_search(ls.output, std::regex(no_steps + R"(\s+nosteps\s.*\s-\s)")))
      << ls.output;

  // progress: none: no step anywhere, and the tables are as they were.
  status = RunCommand(Podrun() + " status " + no_steps, false);
  EXPECT_EQ(status.output.find("STEP"), std::string::npos) << status.output;
  CommandResult top = RunCommand(Podrun() + " top " + no_steps + " --once", false);
  EXPECT_EQ(0, top.exit_code) << top.output;
  EXPECT_EQ(top.output.find("STEP"), std::string::npos) << top.output;
  EXPECT_NE(top.output.find("LAST LINE"), std::string::npos) << top.output;

  {  // As the progress watch and the stall watch would record them.
    JobStore store(Home() + "/podrun.db");
    RunRecords records(store);
    std::vector<WorkerProgress> progress = records.Progress(job, attempt);
    ASSERT_EQ(progress.size(), static_cast<size_t>(kWorkers));
    progress[1].straggler = StragglerNote{0.41, 0.93};
    records.SaveProgress(job, attempt, {progress[1]}, {});
    nlohmann::json verdict = nlohmann::json::array();
    verdict.push_back({{"worker", 0}, {"suspect", false}, {"line", "w0: step 5, sleeping"}});
    verdict.push_back(
        {{"worker", 1}, {"suspect", true}, {"line", "w1: suspect: step 6 (others 7)"}});
    records.SetHangReport(job, attempt,
                          {.made_ns = NowUnixNs(),
                           .text = "the verdict",
                           .json = nlohmann::json{{"job", job}, {"verdict", verdict}}.dump()});
  }
  status = RunCommand(Podrun() + " status " + job, false);
  EXPECT_TRUE(std::regex_search(status.output,
                                std::regex(R"(\nw1 .* 6 \(.* ago\)\s+straggler: 0\.41 steps/s)")))
      << status.output;
  EXPECT_TRUE(std::regex_search(
      status.output, std::regex("hang report \\(made when the stall watch fired, .*\\):\n"
                                "  w1: suspect: step 6 \\(others 7\\)\n"
                                "  w0: step 5, sleeping\n")))
      << status.output;
  status = RunCommand(Podrun() + " status " + job + " --json", false);
  j = nlohmann::json::parse(status.output);
  EXPECT_EQ(j["attempt"]["hang_report"]["verdict"].size(), 2u) << status.output;
  EXPECT_EQ(j["workers"][1]["straggler"], "0.41 steps/s vs median 0.93") << status.output;

  // top: the steps from the store, the straggler first (no worker failed) and marked.
  top = RunCommand(Podrun() + " top " + job + " --once --json", false);
  EXPECT_EQ(0, top.exit_code) << top.output;
  std::vector<nlohmann::json> rows;
  std::istringstream lines(top.output);
  for (std::string line; std::getline(lines, line);) rows.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(rows.size(), static_cast<size_t>(kWorkers)) << top.output;
  EXPECT_EQ(rows[0]["worker"], 1) << top.output;
  EXPECT_EQ(rows[0]["straggler"], "0.41 steps/s vs median 0.93") << top.output;
  for (const nlohmann::json& r : rows) {
    EXPECT_EQ(r["step"], 5 + r["worker"].get<int>()) << r.dump();
  }
  top = RunCommand(Podrun() + " top " + job + " --once", false);
  EXPECT_TRUE(std::regex_search(top.output, std::regex(R"(\n\s*WORKER .* STEP\s+STEPS/S\s+LAST)")))
      << top.output;
  EXPECT_TRUE(std::regex_search(
      top.output, std::regex(R"(\nw1 .* 6\s+\S+\s+straggler: 0\.41 steps/s vs median 0\.93)")))
      << top.output;
}

// The launcher SIGKILLed between two local workers' Start (its test hook stalls it after w0's):
// w0's agent stops the job once no confirmation came, `logs -f` shows what w0 printed and names
// the others as never started, and nothing of the job is left running (as over SSH:
// fault_matrix_test).
TEST_F(CommandsTest, ALocalLauncherKilledBetweenTwoStartsLeavesNoPartialGang) {
  const std::string marker = Marker("partial");
  const std::string spec = WriteSpec("partial-local",
                                     "  echo \"w$PODRUN_WORKER_ID started\"\n"
                                     "  exec -a " +
                                         marker + "-$PODRUN_WORKER_ID sleep 600\n");
  const std::string out = ::testing::TempDir() + "/podrun-cmdtest-partial.out";
  const std::string err = ::testing::TempDir() + "/podrun-cmdtest-partial.err";
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  const pid_t launcher = StartCommand(
      "env PODRUN_TEST_STALL_AFTER_STARTS=1 PODRUN_TEST_START_CONFIRM_SLACK_MS=4000 " + Podrun() +
      " launch " + spec + " --local " + std::to_string(kWorkers) + " > " + out + " 2> " + err);
  ASSERT_NE(std::string::npos,
            WaitForText(err, "test hook: stalled after 1 start", std::chrono::seconds(120))
                .find("test hook: stalled after 1 start"))
      << ReadTextFile(err);
  std::smatch m;
  const std::string printed_out = ReadTextFile(out);
  ASSERT_TRUE(std::regex_search(printed_out, m, std::regex("job: ([0-9a-f-]+)"))) << printed_out;
  const std::string job = m[1];
  EXPECT_EQ(1, WaitForProcessCount(marker + "-0", 1)) << ReadTextFile(err);
  EXPECT_EQ(0, CountProcesses(marker + "-[12]"));
  ASSERT_EQ(0, ::kill(launcher, SIGKILL));
  ::waitpid(launcher, nullptr, 0);

  const CommandResult follow =
      RunCommand("timeout 180 " + Podrun() + " logs " + job + " -f", /*merge_stderr=*/true);
  EXPECT_EQ(1, follow.exit_code) << follow.output;
  EXPECT_NE(std::string::npos, follow.output.find("[w0] w0 started\n")) << follow.output;
  EXPECT_EQ(std::string::npos, follow.output.find("[w1] w1 started")) << follow.output;
  EXPECT_NE(std::string::npos, follow.output.find("the start was never confirmed"))
      << follow.output;
  for (int w : {1, 2}) {
    EXPECT_TRUE(std::regex_search(
        follow.output, std::regex("(^|\n)podrun: w" + std::to_string(w) +
                                  " \\([^)]*\\): never started: the launcher was lost while "
                                  "starting")))
        << follow.output;
  }
  EXPECT_EQ(0, WaitForProcessCount(marker, 0));
  const CommandResult status = RunCommand(Podrun() + " status " + job);
  EXPECT_TRUE(std::regex_search(status.output, std::regex("attempt 1: failed"))) << status.output;
}

}  // namespace
}  // namespace podrun::testing
