// Tests of pinning the host keys of new VMs in known_hosts: only the new node's addresses are
// touched, their old keys go, the published ones are written in the file's style, a symbolic
// link is never written through.
#include "launcher/recovery/host_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/ssh/host_key_policy.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

namespace fs = std::filesystem;

class HostKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("host-keys-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    known_hosts_ = (dir_ / "known_hosts").string();
    for (int i = 0; i < 2; ++i) {
      const std::string value = NewKey("new" + std::to_string(i));
      published_[i] = {{"ssh-ed25519", value}};
      new_keys_.push_back(value);
    }
    old_key_ = NewKey("old");
    other_key_ = NewKey("other");
  }
  // A real ed25519 public key, base64 (ssh-keygen skips lines whose keys do not parse).
  std::string NewKey(const std::string& name) const {
    const std::string key = (dir_ / name).string();
    RunProgram({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key});
    std::istringstream pub(Read(key + ".pub"));
    std::string type, value;
    pub >> type >> value;
    return value;
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  // The key type and key ssh-keygen -F finds for `name` in known_hosts ("" when none).
  std::string Find(const std::string& name) const {
    ProgramResult r = RunProgram({"ssh-keygen", "-F", name, "-f", known_hosts_});
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream words(line);
      std::string host, type, key;
      words >> host >> type >> key;
      return key;
    }
    return "";
  }

  fs::path dir_;
  std::string known_hosts_;
  TpuHostKeys published_;
  std::vector<std::string> new_keys_;
  std::string old_key_;
  std::string other_key_;
  const std::vector<HostKeyAddress> node_{{"10.0.0.10", 22}, {"10.0.0.11", 2222}};
};

TEST_F(HostKeysTest, TheNodesOldKeysAreReplacedByThePublishedOnesOthersUntouched) {
  std::ofstream(known_hosts_) << "10.0.0.10 ssh-ed25519 " << old_key_ << "\n"
                              << "[10.0.0.11]:2222 ssh-ed25519 " << old_key_ << "\n"
                              << "10.0.0.99 ssh-ed25519 " << other_key_ << "\n"
                              << "w0 ssh-ed25519 " << other_key_ << "\n";
  PinnedHostKeys done = PinHostKeys(known_hosts_, node_, published_);
  EXPECT_EQ((std::vector<int>{0, 1}), done.pinned);
  EXPECT_TRUE(done.first_use.empty());
  EXPECT_EQ(new_keys_[0], Find("10.0.0.10"));
  EXPECT_EQ(new_keys_[1], Find("[10.0.0.11]:2222"));
  const std::string text = Read(known_hosts_);
  EXPECT_EQ(std::string::npos, text.find(old_key_)) << text;
  // Another node's worker and an alias keep their keys.
  EXPECT_EQ(other_key_, Find("10.0.0.99"));
  EXPECT_EQ(other_key_, Find("w0"));
  EXPECT_EQ(std::string::npos, text.find("|1|")) << "a plain file stays plain:\n" << text;
  // Marked as published by the VM: a refusal then never advises removing it.
  EXPECT_NE(std::string::npos,
            text.find("10.0.0.10 ssh-ed25519 " + new_keys_[0] + " " + kPublishedKeyComment + "\n"))
      << text;
}

TEST_F(HostKeysTest, AHostileKeyOrAddressIsNeverWritten) {
  std::ofstream(known_hosts_) << "10.0.0.99 ssh-ed25519 " << other_key_ << "\n";
  TpuHostKeys hostile = published_;
  hostile[0].push_back({"ssh-ed25519\n@cert-authority *", new_keys_[0]});
  hostile[1] = {{"ssh-ed25519", new_keys_[1] + "\n@cert-authority * ssh-ed25519 " + other_key_}};
  PinnedHostKeys done = PinHostKeys(known_hosts_, node_, hostile);
  const std::string text = Read(known_hosts_);
  EXPECT_EQ(std::string::npos, text.find("@cert-authority")) << text;
  EXPECT_EQ(new_keys_[0], Find("10.0.0.10"));
  EXPECT_EQ("", Find("[10.0.0.11]:2222"));
  EXPECT_THROW(PinHostKeys(known_hosts_, {{"10.0.0.12\n@cert-authority", 22}}, published_), Error);
  EXPECT_THROW(PinHostKeys(known_hosts_, {{"a,*", 22}}, published_), Error);
  EXPECT_EQ(std::string::npos, Read(known_hosts_).find("@cert-authority"));
}

// A VM publishes its keys a while after its node reads READY: asked again until every worker has,
// for a bounded time, then the rest is left to first use.
TEST_F(HostKeysTest, PublishedKeysAreWaitedForUntilEveryWorkerPublishes) {
  int calls = 0;
  std::vector<std::chrono::seconds> slept;
  PublishWait wait{.limit = std::chrono::seconds(60),
                   .poll = std::chrono::seconds(5),
                   .sleep = [&](std::chrono::seconds s) {
                     slept.push_back(s);
                     return true;
                   }};
  auto fetch = [&] {
    ++calls;
    if (calls == 1) throw Error(ExitCode::kUnreachable, "gcloud: not yet");
    TpuHostKeys keys = published_;
    if (calls < 4) keys.erase(1);  // w1 publishes at the fourth ask
    return keys;
  };
  PinnedHostKeys done = PinPublishedHostKeys(fetch, "tpu n", known_hosts_, node_, wait);
  EXPECT_EQ(4, calls);
  EXPECT_EQ(3u, slept.size());
  EXPECT_EQ((std::vector<int>{0, 1}), done.pinned);
  EXPECT_EQ(new_keys_[1], Find("[10.0.0.11]:2222"));

  // w1 never publishes: the wait ends at its limit, w1 is left to first use.
  calls = 0;
  slept.clear();
  wait.limit = std::chrono::seconds(12);
  done = PinPublishedHostKeys(
      [&] {
        ++calls;
        TpuHostKeys keys = published_;
        keys.erase(1);
        return keys;
      },
      "tpu n", known_hosts_, node_, wait);
  EXPECT_EQ((std::vector<std::chrono::seconds>{std::chrono::seconds(5), std::chrono::seconds(5),
                                               std::chrono::seconds(2)}),
            slept);
  EXPECT_EQ(4, calls);
  EXPECT_EQ((std::vector<int>{0}), done.pinned);
  EXPECT_EQ((std::vector<int>{1}), done.first_use);
  EXPECT_EQ("", Find("[10.0.0.11]:2222"));
}

// Any process on a VM may write its guest attributes: the first keys a worker publishes are
// pinned, one per type, and what it publishes later (while another worker is waited for) is not.
TEST_F(HostKeysTest, TheFirstKeysAWorkerPublishesArePinnedOnePerType) {
  const std::string planted = NewKey("planted");
  int calls = 0;
  PublishWait wait{.limit = std::chrono::seconds(60),
                   .poll = std::chrono::seconds(5),
                   .sleep = [](std::chrono::seconds) { return true; }};
  auto fetch = [&] {
    ++calls;
    TpuHostKeys keys;
    if (calls == 1) {
      keys[0] = {{"ssh-ed25519", new_keys_[0]}, {"ssh-ed25519", planted}};
    } else {
      keys[0] = {{"ssh-ed25519", planted}};
      keys[1] = published_[1];
    }
    return keys;
  };
  PinnedHostKeys done = PinPublishedHostKeys(fetch, "mig s", known_hosts_, node_, wait);
  EXPECT_EQ(2, calls);
  EXPECT_EQ((std::vector<int>{0, 1}), done.pinned);
  EXPECT_EQ(new_keys_[0], Find("10.0.0.10"));
  EXPECT_EQ(new_keys_[1], Find("[10.0.0.11]:2222"));
  EXPECT_EQ(std::string::npos, Read(known_hosts_).find(planted)) << Read(known_hosts_);
}

TEST_F(HostKeysTest, AHashedFileGetsHashedNamesAndANewFileIs0600) {
  std::ofstream(known_hosts_) << "10.0.0.10 ssh-ed25519 " << old_key_ << "\n"
                              << "10.0.0.99 ssh-ed25519 " << other_key_ << "\n";
  ASSERT_EQ(0, RunProgram({"ssh-keygen", "-H", "-f", known_hosts_}).exit_code);
  PinHostKeys(known_hosts_, node_, published_);
  const std::string text = Read(known_hosts_);
  EXPECT_EQ(std::string::npos, text.find("10.0.0.1")) << text;
  EXPECT_EQ(new_keys_[0], Find("10.0.0.10"));
  EXPECT_EQ(new_keys_[1], Find("[10.0.0.11]:2222"));
  EXPECT_EQ(other_key_, Find("10.0.0.99"));
  EXPECT_FALSE(fs::exists(known_hosts_ + ".podrun-pin"));

  fs::remove(known_hosts_);
  PinHostKeys(known_hosts_, node_, published_);
  struct stat st {};
  ASSERT_EQ(0, ::stat(known_hosts_.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  EXPECT_EQ(new_keys_[0], Find("10.0.0.10"));
}

TEST_F(HostKeysTest, AWorkerThatPublishesNoKeyIsLeftToFirstUse) {
  std::ofstream(known_hosts_) << "[10.0.0.11]:2222 ssh-ed25519 " << old_key_ << "\n";
  published_.erase(1);
  PinnedHostKeys done = PinHostKeys(known_hosts_, node_, published_);
  EXPECT_EQ((std::vector<int>{0}), done.pinned);
  EXPECT_EQ((std::vector<int>{1}), done.first_use);
  EXPECT_EQ("", Find("[10.0.0.11]:2222"));  // forgotten, to be recorded on first contact
}

TEST_F(HostKeysTest, ASymlinkedKnownHostsIsRefusedAndLeftAlone) {
  const std::string target = (dir_ / "real_known_hosts").string();
  std::ofstream(target) << "10.0.0.10 ssh-ed25519 " << old_key_ << "\n";
  fs::create_symlink(target, known_hosts_);
  try {
    PinHostKeys(known_hosts_, node_, published_);
    FAIL() << "wrote through a symbolic link";
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("symbolic link")) << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find(known_hosts_)) << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(known_hosts_));
  EXPECT_EQ("10.0.0.10 ssh-ed25519 " + old_key_ + "\n", Read(target));
}

}  // namespace
}  // namespace podrun
