// Integration tests of seeing why (docs/reference.md, "Seeing why") on a real 4-worker testpod
// (pod id 30), real agents and real Python programs:
// - a hang: w2 stops advancing inside `wait_for_collective` while the others, one step ahead,
//   block waiting for it. podrun names w2 as behind before the stall timer, and when the stall
//   watch fires its report names w2 first with its state; w2's own stack (faulthandler on
//   SIGUSR1, the spec's `stacks:`) names the function; gdb gives a native stack per process.
//   The report is kept with the attempt.
// - a straggler made with a per-worker sleep: w3 is flagged once, the others are not; `podrun
//   why` on the running job asks every worker.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 30;

std::string Dir() { return ::testing::TempDir() + "/podrun-insight-test"; }

std::string Podrun() { return "env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY); }

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

class InsightTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static std::string Options() {
    return " --hosts @" + pod_->host_file() + " -i " + pod_->identity() + " --known-hosts " +
           pod_->known_hosts();
  }
  // Writes the spec `name` with `program` as the Python program every worker runs.
  static std::string Spec(const std::string& name, const std::string& keys,
                          const std::string& program) {
    // The program reaches the workers through the spec's sync (each has its own /tmp).
    std::filesystem::create_directories(Dir() + "/" + name);
    std::ofstream(Dir() + "/" + name + "/" + name + ".py") << program;
    const std::string spec = Dir() + "/" + name + ".yaml";
    std::ofstream(spec) << "name: " << name << "\nsync: " << name << "\nworkdir: ~/" << name << "\n"
                        << keys << "run: |\n  python3 -u " << name << ".py\n";
    return spec;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> InsightTest::pod_;

TEST_F(InsightTest, AHungWorkerIsNamedFirstWithItsStateAndItsStacks) {
  const std::string spec = Spec("hang",
                                "stall_seconds: 10\ngrace_seconds: 2\n"
                                "stacks: {signal: SIGUSR1}\n",
                                R"(import faulthandler, os, signal, sys, time
faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
me = int(os.environ["PODRUN_WORKER_ID"])

def wait_for_collective():
    while True:
        time.sleep(0.05)

def block_on_peers():
    time.sleep(3600)

for step in range(1, 1000):
    if me == 2 and step == 6:
        wait_for_collective()
    if me != 2 and step == 7:
        block_on_peers()
    print(f"step {step}", flush=True)
    time.sleep(0.2)
)");
  const std::string log = Dir() + "/hang.log";
  CommandResult launched =
      RunCommand(Podrun() + " launch " + spec + Options() + " >" + log + " 2>&1");
  const std::string out = ReadTextFile(log);
  EXPECT_EQ(1, launched.exit_code) << out;
  // Named at once, before the stall timer: w2 is behind and has stopped.
  const size_t behind = out.find("podrun: w2 stopped at step 5");
  const size_t stall = out.find("hung: no output from any worker");
  EXPECT_NE(behind, std::string::npos) << out;
  EXPECT_LT(behind, stall) << out;
  // The report: w2 first, with its step and what its Python process is doing.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      out, m,
      std::regex(
          R"(podrun: why: job \S+ attempt 1: 4 workers, gathered in [0-9.]+ s; 1 suspect first\npodrun: w2: suspect: step 5 \(others 6\), python3 pid \d+ in (\S+) \d+s, CPU \d+%)")))
      << out;
  // The others are not suspects.
  const std::regex suspect_line(R"(\npodrun: w\d+: suspect:)");
  EXPECT_EQ(1, std::distance(std::sregex_iterator(out.begin(), out.end(), suspect_line),
                             std::sregex_iterator()))
      << out;
  // w2's own dump, made by the signal before the report: its stack names the function.
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(\[w2\] .*line \d+ in wait_for_collective)")))
      << out;
  // The failure names the suspect as its cause.
  EXPECT_NE(out.find("failed: hung: no output from any worker for 10 s (stall_seconds: 10); w2: "
                     "suspect: step 5 (others 6)"),
            std::string::npos)
      << out;
  // Kept with the attempt: the JSON has a native (gdb) stack for every process of every worker.
  CommandResult db = RunCommand("sqlite3 " + Dir() +
                                    "/home/podrun.db \"SELECT json FROM "
                                    "hang_reports\"",
                                /*merge_stderr=*/false);
  ASSERT_EQ(0, db.exit_code) << db.output;
  const nlohmann::json report = nlohmann::json::parse(db.output);
  EXPECT_EQ(2, report["verdict"][0]["worker"]) << db.output.substr(0, 2000);
  ASSERT_EQ(4u, report["workers"].size());
  for (const auto& w : report["workers"]) {
    ASSERT_FALSE(w["processes"].empty()) << w.dump();
    for (const auto& p : w["processes"]) {
      EXPECT_EQ("gdb", p["stack_tool"]) << p.dump();
      EXPECT_NE(p["stack"].get<std::string>().find("#0"), std::string::npos) << p.dump();
    }
    const bool python_signalled = std::any_of(
        w["processes"].begin(), w["processes"].end(),
        [](const nlohmann::json& p) { return p["command"] == "python3" && p["signalled"]; });
    EXPECT_TRUE(python_signalled) << w.dump();
  }
  // Nothing of the job is left running.
  EXPECT_TRUE(
      WaitUntil([&] { return pod_->CountProcesses("hang.py") == 0; }, std::chrono::seconds(20)));
}

TEST_F(InsightTest, AStragglerIsFlaggedOnceAndTheOthersAreNot) {
  const std::string spec = Spec("straggle", "straggler_seconds: 3\n", R"(import os, time
me = int(os.environ["PODRUN_WORKER_ID"])
pause = 0.4 if me == 3 else 0.1
end = time.time() + 14
step = 0
while time.time() < end:
    step += 1
    print(f"step {step} loss 0.1", flush=True)
    time.sleep(pause)
)");
  const std::string log = Dir() + "/straggle.log";
  pid_t launcher = StartCommand(Podrun() + " launch " + spec + Options() + " >" + log + " 2>&1");
  // While it runs, `podrun why` asks every worker (processes only: quick).
  ASSERT_TRUE(WaitUntil([&] { return ReadTextFile(log).find("[w3] step 3 ") != std::string::npos; },
                        std::chrono::seconds(60)))
      << ReadTextFile(log);
  CommandResult why = RunCommand(Podrun() + " why straggle --json --no-stacks", false);
  EXPECT_EQ(0, why.exit_code) << why.output;
  const nlohmann::json j = nlohmann::json::parse(why.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << why.output;
  EXPECT_EQ(4u, j["workers"].size());
  for (const auto& w : j["workers"]) {
    EXPECT_EQ("running", w["state"]) << w.dump();
    EXPECT_FALSE(w["processes"].empty()) << w.dump();
  }
  int status = 0;
  ASSERT_EQ(launcher, ::waitpid(launcher, &status, 0));
  const std::string out = ReadTextFile(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_EQ(1u, Count(out, "podrun: w3 is a straggler: ")) << out;
  EXPECT_EQ(1u, Count(out, "is a straggler")) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(w3 is a straggler: [0-3]\.\d\d steps/s vs median ([5-9]|10)\.\d\d)")))
      << out;
}

}  // namespace
}  // namespace podrun::testing
