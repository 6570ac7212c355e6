// Integration test of scripts/testpod through the TestPod fixture: a 4-worker pod (id 90).
#include "tests/testpod.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

namespace podrun::testing {
namespace {

// One pod for the whole binary: bringing it up once keeps the test fast.
class TestPodTest : public ::testing::Test {
 protected:
  // Brings the shared pod up before the first test of the suite.
  static void SetUpTestSuite() { pod_ = std::make_unique<TestPod>(4, 90); }
  // Tears it down after the last.
  static void TearDownTestSuite() { pod_.reset(); }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> TestPodTest::pod_;

TEST_F(TestPodTest, WritesClientFiles) {
  ASSERT_EQ(4u, pod_->hosts().size());
  EXPECT_EQ("root@10.233.90.10", pod_->hosts()[0]);
  EXPECT_EQ("root@10.233.90.13", pod_->hosts()[3]);
  EXPECT_EQ("10.233.90.12", pod_->address(2));
  EXPECT_EQ("/tmp/podrun-testpod-90", pod_->dir());
  CommandResult env = RunCommand("cat " + pod_->dir() + "/env");
  EXPECT_NE(std::string::npos, env.output.find("PODRUN_TESTPOD_N=4")) << env.output;
}

TEST_F(TestPodTest, HostnamesAreWorkerNames) {
  for (int i = 0; i < 4; ++i) {
    CommandResult r = pod_->Ssh(i, "hostname");
    ASSERT_EQ(0, r.exit_code) << r.output;
    EXPECT_EQ("w" + std::to_string(i) + "\n", r.output);
  }
}

TEST_F(TestPodTest, AddressesInHostsFileWork) {
  CommandResult r = RunCommand("ssh -F " + pod_->ssh_config() + " -o BatchMode=yes " +
                               pod_->hosts()[3] + " hostname");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("w3\n", r.output);
}

TEST_F(TestPodTest, EachWorkerHasItsOwnTmpAndHome) {
  CommandResult w0 = pod_->Ssh(0, "echo hello > /tmp/testpod_test && touch ~/mark");
  ASSERT_EQ(0, w0.exit_code) << w0.output;
  CommandResult w1 = pod_->Ssh(1, "test -e /tmp/testpod_test || test -e ~/mark || echo absent");
  EXPECT_EQ("absent\n", w1.output);
  CommandResult back = pod_->Exec(0, "cat /tmp/testpod_test && ls /root/mark");
  EXPECT_EQ(0, back.exit_code) << back.output;
  EXPECT_EQ("hello\n/root/mark\n", back.output);
}

TEST_F(TestPodTest, WorkerNamesResolveToWorkerAddresses) {
  CommandResult r = pod_->Ssh(0, "getent hosts w1; hostname -i");
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(pod_->address(1) + " ")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(pod_->address(0) + "\n")) << r.output;
}

TEST_F(TestPodTest, WorkersReachEachOther) {
  CommandResult r = pod_->Exec(0, "exec 3<>/dev/tcp/w3/22 && head -c 7 <&3");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("SSH-2.0", r.output);
}

TEST_F(TestPodTest, CutMakesWorkerUnreachableAndHealRestoresIt) {
  pod_->Cut(1);
  CommandResult cut = pod_->Ssh(1, "hostname", /*connect_timeout_s=*/2);
  pod_->Heal(1);
  EXPECT_EQ(255, cut.exit_code) << cut.output;
  CommandResult healed = pod_->Ssh(1, "hostname");
  EXPECT_EQ(0, healed.exit_code) << healed.output;
  EXPECT_EQ("w1\n", healed.output);
}

TEST(TestPodOptions, SshdOptionsReachSshdConfig) {
  TestPod pod(1, 91, {"AllowStreamLocalForwarding no"});
  CommandResult r = RunCommand("tail -1 " + pod.dir() + "/w0/sshd_config");
  EXPECT_EQ("AllowStreamLocalForwarding no\n", r.output);
  EXPECT_EQ("w0\n", pod.Ssh(0, "hostname").output);
}

TEST(TestPodOptions, ThrowsWithSshdLogWhenPodDoesNotComeUp) {
  try {
    TestPod pod(1, 91, {"NoSuchOption yes"});
    FAIL() << "TestPod came up with a bad sshd option";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("Bad configuration option"))
        << e.what();
  }
  EXPECT_NE(0, RunCommand("test -e /tmp/podrun-testpod-91").exit_code);
}

}  // namespace
}  // namespace podrun::testing
