// Tests of the keeper's environment allow-list.
#include "launcher/recovery/keeper_env.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(KeeperEnvironmentTest, KeepsTheAllowListAndTheSecretsOnly) {
  const char* environ[] = {"HOME=/home/u",
                           "PATH=/usr/bin",
                           "SSH_AUTH_SOCK=/tmp/agent",
                           "CLOUDSDK_CORE_PROJECT=p",
                           "PODRUN_HOME=/h",
                           "PODRUN_PERSIST=1",
                           "WANDB_API_KEY=secret",
                           "AWS_SECRET_ACCESS_KEY=not-the-job's",
                           "LD_PRELOAD=/tmp/evil.so",
                           "PODRUN=not-a-prefix-match",
                           "HOMEX=no",
                           "=empty-name",
                           "noequals",
                           nullptr};
  EXPECT_EQ((std::vector<std::string>{"HOME=/home/u", "PATH=/usr/bin", "SSH_AUTH_SOCK=/tmp/agent",
                                      "CLOUDSDK_CORE_PROJECT=p", "PODRUN_HOME=/h",
                                      "WANDB_API_KEY=secret", "PODRUN_PERSIST=0"}),
            KeeperEnvironment(environ, {"WANDB_API_KEY"}));
  EXPECT_TRUE(KeeperEnvironment(nullptr, {}).empty());
}

// gcloud behind a proxy: a keeper's gcloud must reach the API as the launcher's did.
TEST(KeeperEnvironmentTest, KeepsTheProxiesInBothCases) {
  const char* environ[] = {"HTTPS_PROXY=http://proxy:3128",     "https_proxy=http://proxy:3128",
                           "HTTP_PROXY=http://proxy:3128",      "http_proxy=http://proxy:3128",
                           "NO_PROXY=metadata.google.internal", "no_proxy=localhost",
                           "FTP_PROXY=http://not-kept",         nullptr};
  EXPECT_EQ((std::vector<std::string>{
                "HTTPS_PROXY=http://proxy:3128", "https_proxy=http://proxy:3128",
                "HTTP_PROXY=http://proxy:3128", "http_proxy=http://proxy:3128",
                "NO_PROXY=metadata.google.internal", "no_proxy=localhost", "PODRUN_PERSIST=0"}),
            KeeperEnvironment(environ, {}));
}

}  // namespace
}  // namespace podrun
