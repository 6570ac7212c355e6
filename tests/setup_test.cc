// Integration tests of the spec's `setup` on a real 3-worker testpod: it runs once per worker
// over several launches (cached by its stamp), again on --force-setup, on a changed setup text
// and on a changed setup input; a setup that fails on one worker stops the launch with exit 3,
// naming the worker with its last lines, and nothing runs anywhere; an unreadable setup input is
// a bad spec (exit 2). Mounts (bind, for real) come before setup.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kPodId = 19;

std::string Dir() { return ::testing::TempDir() + "/podrun-setup-test"; }

class SetupTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RunCommand("rm -rf " + Dir());
    std::filesystem::create_directories(Dir());
    pod_ = std::make_unique<TestPod>(kWorkers, kPodId);
  }
  static void TearDownTestSuite() { pod_.reset(); }

  static CommandResult Launch(const std::string& spec, const std::string& extra = "") {
    return RunCommand("env PODRUN_HOME=" + Dir() + "/home " + std::string(PODRUN_BINARY) +
                      " launch " + spec + " --hosts @" + pod_->host_file() + " -i " +
                      pod_->identity() + " --known-hosts " + pod_->known_hosts() + " " + extra);
  }
  // A spec whose setup counts its runs in ~/<counter> and whose run prints the count.
  static std::string Spec(const std::string& name, const std::string& counter,
                          const std::string& setup_extra = "", const std::string& inputs = "") {
    const std::string path = Dir() + "/" + name + ".yaml";
    std::ofstream(path) << "name: " << name << "\n"
                        << (inputs.empty() ? "" : "setup_inputs: [" + inputs + "]\n")
                        << "setup: |\n  echo installing " << setup_extra << "\n"
                        << "  echo x >> ~/" << counter << "\n"
                        << "run: echo \"setups $(wc -l < ~/" << counter << ")\"\n";
    return path;
  }
  static void ExpectSetups(const CommandResult& r, int count) {
    for (int i = 0; i < kWorkers; ++i) {
      const std::string line = "[w" + std::to_string(i) + "] setups " + std::to_string(count);
      EXPECT_NE(std::string::npos, r.output.find(line)) << line << "\n" << r.output;
    }
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> SetupTest::pod_;

TEST_F(SetupTest, RunsOncePerWorkerUntilSomethingItDependsOnChanges) {
  const std::string spec = Spec("cached", "count-a");
  CommandResult first = Launch(spec);
  ASSERT_EQ(0, first.exit_code) << first.output;
  ExpectSetups(first, 1);
  EXPECT_NE(std::string::npos, first.output.find("[w2] installing")) << first.output;
  EXPECT_NE(std::string::npos, first.output.find("ran on w0-2")) << first.output;
  for (int i = 0; i < 2; ++i) {
    CommandResult again = Launch(spec);
    ASSERT_EQ(0, again.exit_code) << again.output;
    ExpectSetups(again, 1);
    EXPECT_NE(std::string::npos, again.output.find("cached (unchanged) on w0-2")) << again.output;
    EXPECT_EQ(std::string::npos, again.output.find("installing")) << again.output;
  }
  CommandResult forced = Launch(spec, "--force-setup");
  ASSERT_EQ(0, forced.exit_code) << forced.output;
  ExpectSetups(forced, 2);
  // Another setup text: runs again.
  CommandResult changed = Launch(Spec("cached", "count-a", "again"));
  ASSERT_EQ(0, changed.exit_code) << changed.output;
  ExpectSetups(changed, 3);
}

TEST_F(SetupTest, AChangedSetupInputRunsItAgainAndAMissingOneIsABadSpec) {
  std::ofstream(Dir() + "/requirements.txt") << "jax==0.4.1\n";
  const std::string spec = Spec("inputs", "count-b", "", "requirements.txt");
  ASSERT_EQ(0, Launch(spec).exit_code);
  CommandResult same = Launch(spec);
  ASSERT_EQ(0, same.exit_code) << same.output;
  ExpectSetups(same, 1);
  std::ofstream(Dir() + "/requirements.txt") << "jax==0.4.2\n";
  CommandResult changed = Launch(spec);
  ASSERT_EQ(0, changed.exit_code) << changed.output;
  ExpectSetups(changed, 2);

  CommandResult missing = Launch(Spec("missing", "count-c", "", "no-such-file.txt"));
  EXPECT_EQ(2, missing.exit_code) << missing.output;
  EXPECT_NE(std::string::npos, missing.output.find("no-such-file.txt")) << missing.output;
  EXPECT_EQ(std::string::npos, missing.output.find("job: ")) << missing.output;
}

TEST_F(SetupTest, AFailedSetupStartsNothingAnywhereAndNamesTheWorker) {
  const std::string path = Dir() + "/failing.yaml";
  std::ofstream(path) << "name: failing\nsetup: |\n"
                         "  echo resolving dependencies\n"
                         "  if [ $PODRUN_WORKER_ID = 1 ]; then echo 'no matching distribution' "
                         ">&2; exit 5; fi\n"
                         "run: touch /tmp/podrun-setup-test-ran\n";
  CommandResult r = Launch(path);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos,
            r.output.find("w1 (" + pod_->hosts()[1] + "): setup failed: exit code 5"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("| no matching distribution")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("nothing was started anywhere")) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(0, pod_->Exec(i, "test -e /tmp/podrun-setup-test-ran").exit_code) << "w" << i;
  }
}

// Mounts come before setup: a bind mount (the one type this machine can do for real; nfs,
// gcsfuse and sshfs are checked by their exact command lines in worker/host/mounts_test.cc) is in
// place for setup and run, mounted once over two launches, and a mount that fails starts
// nothing anywhere, naming the worker, the mount and the command.
TEST_F(SetupTest, ABindMountIsInPlaceForSetupAndRunAndMountedOnce) {
  for (int i = 0; i < kWorkers; ++i) {
    ASSERT_EQ(0, pod_->Exec(i,
                            "mkdir -p ~/bind-src && echo data-of-$(hostname) > "
                            "~/bind-src/hello.txt")
                     .exit_code);
  }
  const std::string path = Dir() + "/bind.yaml";
  std::ofstream(path) << "name: bind\n"
                         "mounts:\n  - {type: bind, source: ~/bind-src, path: /mnt/podrun-bind}\n"
                         "setup: cat /mnt/podrun-bind/hello.txt\n"
                         "run: echo \"sees $(cat /mnt/podrun-bind/hello.txt) mounts $(grep -c "
                         "' /mnt/podrun-bind ' /proc/self/mountinfo)\"\n";
  for (int launch = 0; launch < 2; ++launch) {
    CommandResult r = Launch(path);
    ASSERT_EQ(0, r.exit_code) << r.output;
    for (int i = 0; i < kWorkers; ++i) {
      const std::string w = "w" + std::to_string(i);
      const std::string line = "[" + w + "] sees data-of-" + w + " mounts 1";
      EXPECT_NE(std::string::npos, r.output.find(line)) << line << "\n" << r.output;
      const std::string action = launch == 0 ? "mounted " : "/mnt/podrun-bind: already mounted";
      EXPECT_NE(std::string::npos, r.output.find(w + " (" + pod_->hosts()[i] + "): " + action))
          << r.output;
    }
  }
  const std::string bad = Dir() + "/bad-mount.yaml";
  std::ofstream(bad) << "name: bad-mount\n"
                        "mounts:\n  - {type: bind, source: /no-such-dir, path: /mnt/podrun-bad}\n"
                        "run: touch /tmp/podrun-bad-mount-ran\n";
  CommandResult r = Launch(bad);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("w0 (" + pod_->hosts()[0] + "): agent Mount: "))
      << r.output;
  EXPECT_NE(
      std::string::npos,
      r.output.find("mount /no-such-dir on /mnt/podrun-bad (bind): `mount "
                    "--no-canonicalize --bind /no-such-dir /mnt/podrun-bad` failed (exit 32)"))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find("nothing was started anywhere")) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(0, pod_->Exec(i, "test -e /tmp/podrun-bad-mount-ran").exit_code) << "w" << i;
  }
}

}  // namespace
}  // namespace podrun::testing
