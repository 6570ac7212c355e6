// Integration tests of `podrun rerun` on a real 4-worker testpod: after workers 1 and 3 fail
// (on_failure: continue), `rerun --failed` runs only those two, with their pod-wide indexes, the
// whole pod's counts and PODRUN_ATTEMPT=2; a plain rerun runs the whole gang as attempt 3; a
// rerun with nothing failed runs nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 4;
constexpr int kPodId = 22;

std::string Dir() { return ::testing::TempDir() + "/podrun-rerun-test"; }

TEST(RerunTest, FailedWorkersOnlyThenTheWholeGang) {
  RunCommand("rm -rf " + Dir());
  std::filesystem::create_directories(Dir());
  TestPod pod(kWorkers, kPodId);
  const std::string spec = Dir() + "/shards.yaml";
  // Workers 1 and 3 fail on the first attempt only.
  std::ofstream(spec) << "name: shards\non_failure: continue\nrun: |\n"
                         "  echo \"shard $PODRUN_WORKER_ID/$PODRUN_NUM_WORKERS attempt "
                         "$PODRUN_ATTEMPT resumed ${PODRUN_RESUMED_FROM:-none}\"\n"
                         "  if [ $PODRUN_ATTEMPT = 1 ] && [ $((PODRUN_WORKER_ID % 2)) = 1 ]; then "
                         "exit 3; fi\n";
  const std::string podrun = "env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY);
  CommandResult first = RunCommand(podrun + " launch " + spec + " --hosts @" + pod.host_file() +
                                   " -i " + pod.identity() + " --known-hosts " + pod.known_hosts());
  EXPECT_EQ(1, first.exit_code) << first.output;

  CommandResult failed = RunCommand(podrun + " rerun shards --failed");
  ASSERT_EQ(0, failed.exit_code) << failed.output;
  EXPECT_NE(std::string::npos, failed.output.find("attempt 2 of job")) << failed.output;
  EXPECT_NE(std::string::npos, first.output.find("[w0] shard 0/4 attempt 1 resumed none"))
      << first.output;
  EXPECT_NE(std::string::npos, failed.output.find("[w1] shard 1/4 attempt 2 resumed failure"))
      << failed.output;
  EXPECT_NE(std::string::npos, failed.output.find("[w3] shard 3/4 attempt 2")) << failed.output;
  EXPECT_EQ(std::string::npos, failed.output.find("[w0]")) << failed.output;
  EXPECT_EQ(std::string::npos, failed.output.find("[w2]")) << failed.output;

  CommandResult nothing = RunCommand(podrun + " rerun shards --failed");
  EXPECT_EQ(0, nothing.exit_code) << nothing.output;
  EXPECT_NE(std::string::npos, nothing.output.find("nothing to rerun")) << nothing.output;

  CommandResult all = RunCommand(podrun + " rerun shards");
  ASSERT_EQ(0, all.exit_code) << all.output;
  for (int i = 0; i < kWorkers; ++i) {
    const std::string line =
        "[w" + std::to_string(i) + "] shard " + std::to_string(i) + "/4 attempt 3";
    EXPECT_NE(std::string::npos, all.output.find(line)) << line << "\n" << all.output;
  }
  CommandResult ls = RunCommand(podrun + " ls --json");
  EXPECT_TRUE(std::regex_search(ls.output, std::regex(R"("attempts":\s*3)"))) << ls.output;
}

// restarts: 2 with worker 2 failing on attempts 1 and 2: the whole gang runs three attempts
// (after 5 s and 10 s) and the launch succeeds.
TEST(RestartsTest, TheGangRestartsAfterFailuresUntilItSucceeds) {
  std::filesystem::create_directories(Dir());
  TestPod pod(3, kPodId + 1);
  const std::string spec = Dir() + "/restarts.yaml";
  std::ofstream(spec)
      << "name: restarts\nrestarts: 2\nrun: |\n"
         "  echo \"attempt $PODRUN_ATTEMPT\"\n"
         "  if [ $PODRUN_WORKER_ID = 2 ] && [ $PODRUN_ATTEMPT -lt 3 ]; then exit 3; "
         "fi\n";
  const std::string podrun =
      "env PODRUN_HOME=" + Dir() + "/home-restarts " + std::string(PODRUN_BINARY);
  const auto began = std::chrono::steady_clock::now();
  CommandResult r = RunCommand(podrun + " launch " + spec + " --hosts @" + pod.host_file() +
                               " -i " + pod.identity() + " --known-hosts " + pod.known_hosts());
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_GE(std::chrono::steady_clock::now() - began, std::chrono::seconds(15));  // 5 s + 10 s
  EXPECT_NE(std::string::npos, r.output.find("restarting the whole gang in 5 s (restart 1 of 2"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("restarting the whole gang in 10 s (restart 2 of 2"))
      << r.output;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(std::string::npos, r.output.find("[w" + std::to_string(i) + "] attempt 3"))
        << r.output;
  }
  CommandResult ls = RunCommand(podrun + " ls --json");
  EXPECT_TRUE(std::regex_search(ls.output, std::regex(R"("attempts":\s*3)"))) << ls.output;
}

}  // namespace
}  // namespace podrun::testing
