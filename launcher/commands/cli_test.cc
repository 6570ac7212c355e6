// Bad usage of the command line: exit 2 with a message, nothing started.
#include "launcher/commands/cli.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "launcher/commands/pod_options.h"

namespace podrun {
namespace {

int RunPodrun(std::vector<std::string> args) {
  args.insert(args.begin(), "podrun");
  std::vector<char*> argv;
  argv.reserve(args.size());
  for (auto& a : args) argv.push_back(a.data());
  return Main(static_cast<int>(argv.size()), argv.data());
}

TEST(Cli, BadUsageExits2WithMessage) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(2, RunPodrun({}));
  EXPECT_EQ(2, RunPodrun({"exce"}));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("did you mean 'exec'")) << err;

  ::testing::internal::CaptureStderr();
  EXPECT_EQ(2, RunPodrun({"exec", "--", "true"}));  // no pod
  EXPECT_EQ(2, RunPodrun({"exec", "--hosts", "a,b", "-w", "5", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--hosts", "a", "--bogus", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--hosts", "a"}));                                // no command
  EXPECT_EQ(2, RunPodrun({"exec", "--hosts", "a", "--local", "2", "--", "true"}));  // two pods
  EXPECT_EQ(2, RunPodrun({"exec", "--hosts", "a:99999", "--", "true"}));
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("no pod selected")) << err;
  EXPECT_NE(std::string::npos, err.find("worker 5 does not exist")) << err;
  EXPECT_NE(std::string::npos, err.find("--bogus")) << err;
  EXPECT_NE(std::string::npos, err.find("no command given")) << err;
  for (size_t pos = 0; (pos = err.find('\n', pos)) != std::string::npos; ++pos) {
    EXPECT_NE(0u, err.compare(pos + 1, 2, "[w"));  // podrun's messages never start with [w
  }
}

TEST(Cli, NoPersistIsAPodOptionOfTheContract) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(2, RunPodrun({"exec", "--no-persist", "--", "true"}));  // taken; only no pod is wrong
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(std::string::npos, err.find("no pod selected")) << err;
  EXPECT_EQ(std::string::npos, err.find("--no-persist")) << err;
}

TEST(Cli, BadTpuZoneOrProjectNamesExit2BeforeGcloudRuns) {
  ::setenv("PODRUN_GCLOUD", "/nonexistent/gcloud-must-not-run", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(2, RunPodrun({"exec", "--tpu", "node-a", "--zone=-x", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--tpu", "../x", "--zone", "us-central1-a", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--tpu", "node-a,a/b", "--zone", "z", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--tpu", "NODE", "--zone", "z", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--tpu", "n", "--zone", "z", "--project=-p", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"down", "--tpu", "node-a", "--zone=-x", "-y"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--mig", "slice-1,-x", "--zone", "z", "--", "true"}));
  EXPECT_EQ(2, RunPodrun({"exec", "--mig", "slice-1", "--", "true"}));  // no zone
  EXPECT_EQ(2, RunPodrun({"exec", "--mig", "s", "--tpu", "t", "--zone", "z", "--", "true"}));
  const std::string err = ::testing::internal::GetCapturedStderr();
  ::unsetenv("PODRUN_GCLOUD");
  EXPECT_NE(std::string::npos, err.find("--zone '-x': it must start with a letter")) << err;
  EXPECT_NE(std::string::npos, err.find("--tpu '../x': '.' is not allowed")) << err;
  EXPECT_NE(std::string::npos, err.find("--tpu 'a/b': '/' is not allowed")) << err;
  EXPECT_NE(std::string::npos, err.find("--tpu 'NODE': 'N' is not allowed")) << err;
  EXPECT_NE(std::string::npos, err.find("--project '-p': 2 characters")) << err;
  EXPECT_NE(std::string::npos, err.find("zone '-x': it must start with a letter")) << err;
  EXPECT_NE(std::string::npos, err.find("--mig '-x': it must start with a letter")) << err;
  EXPECT_NE(std::string::npos, err.find("--mig needs --zone ZONE")) << err;
  EXPECT_NE(std::string::npos, err.find("choose one of --hosts, --tpu, --mig and --local")) << err;
  EXPECT_EQ(std::string::npos, err.find("gcloud-must-not-run")) << err;
}

TEST(Cli, VersionAndHelpExit0) {
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(0, RunPodrun({"--version"}));
  EXPECT_EQ(0, RunPodrun({"help"}));
  EXPECT_EQ(0, RunPodrun({"exec", "--help"}));
  EXPECT_EQ(0, RunPodrun({"help", "exec"}));
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(std::string::npos, out.find("podrun 0."));
  EXPECT_NE(std::string::npos, out.find("--strict-host-keys"));
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

// The spec's create: is for its own node only: `--tpu SAME --zone Z` without --project, when
// the spec names a project, may be a node of another project (gcloud's default): not covered.
TEST(MergePodSettings, CreateIsKeptOnlyForTheSpecsOwnNodeInItsProject) {
  PodSettings spec;
  spec.tpu = "n";
  spec.zone = "z";
  spec.project = "p";
  spec.create = TpuCreate{.accelerator_type = "v4-8", .version = "v"};
  PodSettings cli;
  EXPECT_TRUE(MergePodSettings(cli, spec).create);  // the spec's own pod
  cli.tpu = "n";
  cli.zone = "z";
  EXPECT_FALSE(MergePodSettings(cli, spec).create);  // no project on the command line
  cli.project = "other";
  EXPECT_FALSE(MergePodSettings(cli, spec).create);
  cli.project = "p";
  EXPECT_TRUE(MergePodSettings(cli, spec).create);
  spec.project.reset();  // a spec naming no project covers its node wherever gcloud puts it
  cli.project.reset();
  EXPECT_TRUE(MergePodSettings(cli, spec).create);
}

}  // namespace
}  // namespace podrun
