// Integration test of `podrun doctor` on a real 2-worker testpod: a stale libtpu lockfile on w1
// and a TCMalloc LD_PRELOAD in w0's login environment are reported (exit 1), --json gives one
// object per worker, and --fix removes the lockfile and says so.
#include <gtest/gtest.h>

#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kPodId = 24;

TEST(DoctorTest, ReportsAStaleLockfileAndATcmallocPreloadAndFixesTheLockfile) {
  TestPod pod(2, kPodId);
  ASSERT_EQ(0, pod.Exec(1, "touch /tmp/libtpu_lockfile").exit_code);
  ASSERT_EQ(0, pod.Exec(0,
                        "echo 'export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4' "
                        ">> ~/.profile")
                   .exit_code);
  const std::string doctor = "env PODRUN_HOME=" + ::testing::TempDir() +
                             "/podrun-doctor-test-home " + std::string(PODRUN_BINARY) +
                             " doctor --hosts @" + pod.host_file() + " -i " + pod.identity() +
                             " --known-hosts " + pod.known_hosts();
  CommandResult report = RunCommand(doctor, /*merge_stderr=*/false);
  EXPECT_EQ(1, report.exit_code) << report.output;
  EXPECT_NE(std::string::npos, report.output.find("w0 (" + pod.hosts()[0] + "): agent "))
      << report.output;
  EXPECT_NE(std::string::npos, report.output.find("libtpu lockfile: stale")) << report.output;
  EXPECT_NE(std::string::npos, report.output.find("libtpu lockfile: absent")) << report.output;
  EXPECT_NE(std::string::npos, report.output.find("TCMalloc: breaks gsutil")) << report.output;

  CommandResult json = RunCommand(doctor + " --json", /*merge_stderr=*/false);
  std::istringstream lines(json.output);
  int objects = 0;
  for (std::string line; std::getline(lines, line);) {
    ++objects;
    EXPECT_TRUE(
        std::regex_search(line, std::regex(R"(^\{.*"worker":)" + std::to_string(objects - 1))))
        << line;
    if (objects == 2) {
      EXPECT_NE(std::string::npos, line.find(R"("libtpu_lockfile":"stale")")) << line;
    } else {
      EXPECT_NE(std::string::npos, line.find(R"("tcmalloc_preload":true)")) << line;
    }
  }
  EXPECT_EQ(2, objects) << json.output;

  pod.Exec(0, "sed -i '/LD_PRELOAD/d' ~/.profile");
  CommandResult fixed = RunCommand(doctor + " --fix", /*merge_stderr=*/false);
  EXPECT_EQ(0, fixed.exit_code) << fixed.output;
  EXPECT_NE(std::string::npos, fixed.output.find("fixed: removed a stale /tmp/libtpu_lockfile"))
      << fixed.output;
  EXPECT_NE(0, pod.Exec(1, "test -e /tmp/libtpu_lockfile").exit_code);
}

}  // namespace
}  // namespace podrun::testing
