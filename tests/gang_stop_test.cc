// Integration test: a gang stop that cannot reach a worker (its link is down) is recorded as
// pending and delivered by the next `podrun status` once the worker is back, so a stopped gang
// never keeps a worker (and its TPU) busy.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kPodId = 15;

std::string Home() { return ::testing::TempDir() + "/podrun-gang-stop-test-home"; }

std::string Podrun() { return "env PODRUN_HOME=" + Home() + " " + std::string(PODRUN_BINARY); }

TEST(GangStopTest, StopOfACutOffWorkerIsDeliveredOnceItIsBack) {
  RunCommand("rm -rf " + Home());
  TestPod pod(kWorkers, kPodId);
  const std::string marker = "podrun-gang-stop-marker-" + std::to_string(::getpid());
  const std::string spec = ::testing::TempDir() + "/gang-stop.yaml";
  // Worker 0 fails once worker 2 has been cut off; workers 1 and 2 would run for 10 minutes.
  std::ofstream(spec) << "name: gang-stop\ngrace_seconds: 2\nrun: |\n"
                         "  if [ $PODRUN_WORKER_ID = 0 ]; then\n"
                         "    while [ ! -e /root/fail-now ]; do sleep 0.2; done; exit 3\n"
                         "  fi\n"
                         "  exec -a " +
                             marker + "-$PODRUN_WORKER_ID sleep 600\n";
  const std::string options = " --hosts @" + pod.host_file() + " -i " + pod.identity() +
                              " --known-hosts " + pod.known_hosts();
  const std::string log = ::testing::TempDir() + "/gang-stop-launch.log";
  // A short keepalive: the cut-off worker is found unreachable in seconds, not a minute.
  pid_t launcher = StartCommand("env PODRUN_SSH_KEEPALIVE_SECONDS=2 " + Podrun() + " launch " +
                                spec + options + " >" + log + " 2>&1");
  ASSERT_TRUE(
      WaitUntil([&] { return pod.CountProcesses(marker + "-2") == 1; }, std::chrono::seconds(60)))
      << ReadTextFile(log);
  // Each worker starts its process on its own: worker 1's may come a moment after worker 2's.
  ASSERT_TRUE(
      WaitUntil([&] { return pod.CountProcesses(marker + "-1") == 1; }, std::chrono::seconds(30)))
      << ReadTextFile(log);
  // And the launcher has the starts' answers: a cut before them is a failed Start instead.
  ASSERT_TRUE(
      WaitUntil([&] { return ReadTextFile(log).find("started on 3 workers") != std::string::npos; },
                std::chrono::seconds(30)))
      << ReadTextFile(log);

  pod.Cut(2);
  ASSERT_EQ(0, RunCommand("touch " + pod.dir() + "/w0/home/fail-now").exit_code);
  int status = 0;
  ASSERT_EQ(launcher, ::waitpid(launcher, &status, 0));
  const std::string out = ReadTextFile(log);
  ASSERT_TRUE(WIFEXITED(status)) << out;
  EXPECT_EQ(1, WEXITSTATUS(status)) << out;
  EXPECT_NE(out.find("the stop could not be delivered"), std::string::npos) << out;
  // Worker 1 was stopped with the gang; worker 2 could not be, and still runs.
  EXPECT_TRUE(
      WaitUntil([&] { return pod.CountProcesses(marker + "-1") == 0; }, std::chrono::seconds(30)));
  EXPECT_EQ(1, pod.CountProcesses(marker + "-2"));

  pod.Heal(2);
  CommandResult st = RunCommand(Podrun() + " status");
  EXPECT_NE(st.output.find("stopped now"), std::string::npos) << st.output;
  EXPECT_TRUE(
      WaitUntil([&] { return pod.CountProcesses(marker + "-2") == 0; }, std::chrono::seconds(30)))
      << st.output;
  // Delivered once: the next status has nothing pending and shows the worker stopped.
  CommandResult again = RunCommand(Podrun() + " status");
  EXPECT_EQ(again.output.find("stopped now"), std::string::npos) << again.output;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(again.output, m, std::regex(R"(\nw2\s+\S+\s+stopped)")))
      << again.output;
}

}  // namespace
}  // namespace podrun::testing
