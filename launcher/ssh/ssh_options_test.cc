// Tests of how ssh_config and podrun's own options combine (docs/design.md decision 13).
#include "launcher/ssh/ssh_options.h"

#include <gtest/gtest.h>
#include <libssh/libssh.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "launcher/base/error.h"
#include "launcher/ssh/host_key_policy.h"

namespace podrun {
namespace {

struct SessionFree {
  void operator()(ssh_session s) const { ssh_free(s); }
};
using Session = std::unique_ptr<ssh_session_struct, SessionFree>;

std::string StringOption(ssh_session s, ssh_options_e option) {
  char* value = nullptr;
  if (ssh_options_get(s, option, &value) != SSH_OK || value == nullptr) return "";
  std::string out = value;
  ssh_string_free_char(value);
  return out;
}

class SshOptionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("ssh-options-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    config_ = (dir_ / "ssh_config").string();
    // Everything a hostile or careless ssh_config could say to weaken host keys, and the
    // settings it may legitimately add.
    std::ofstream(config_) << "Host w7\n"
                              "  HostName 10.1.2.7\n"
                              "  Port 2222\n"
                              "  User cfguser\n"
                              "  UserKnownHostsFile /dev/null\n"
                              "  GlobalKnownHostsFile /dev/null\n"
                              "  StrictHostKeyChecking no\n"
                              "Host jumped\n"
                              "  ProxyCommand ssh -W %h:%p bastion\n"
                              "Host *\n"
                              "  UserKnownHostsFile /tmp/elsewhere_known_hosts\n";
    options_.ssh_config = config_;
    options_.known_hosts = (dir_ / "known_hosts").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SshTarget Configure(const HostSpec& target) {
    session_.reset(ssh_new());
    return ConfigureSession(session_.get(), target, options_);
  }

  std::filesystem::path dir_;
  std::string config_;
  SshOptions options_;
  Session session_;
};

TEST_F(SshOptionsTest, SshConfigSuppliesWhatPodrunWasNotGiven) {
  SshTarget t = Configure(HostSpec{{}, "w7", {}});
  EXPECT_EQ("10.1.2.7", t.address);
  EXPECT_EQ(2222u, t.port);
  EXPECT_EQ("cfguser", t.user);
  EXPECT_EQ("", t.proxy_command);
  EXPECT_EQ("cfguser@10.1.2.7:2222", t.Describe());
}

TEST_F(SshOptionsTest, ExplicitPortAndUserWinOverSshConfig) {
  SshTarget t = Configure(HostSpec{"me", "w7", 22});
  EXPECT_EQ("10.1.2.7", t.address);  // HostName is still the config's to give
  EXPECT_EQ(22u, t.port);
  EXPECT_EQ("me", t.user);
}

TEST_F(SshOptionsTest, DefaultUserAndPortWinOverSshConfigToo) {
  options_.default_user = "dflt";
  options_.default_port = 2200;
  SshTarget t = Configure(HostSpec{{}, "w7", {}});
  EXPECT_EQ(2200u, t.port);
  EXPECT_EQ("dflt", t.user);
  // ... but what the host entry says wins over both.
  t = Configure(HostSpec{"own", "w7", 23});
  EXPECT_EQ(23u, t.port);
  EXPECT_EQ("own", t.user);
}

TEST_F(SshOptionsTest, KnownHostsFilesArePodrunsWhateverSshConfigSays) {
  Configure(HostSpec{{}, "w7", {}});
  EXPECT_EQ(options_.known_hosts, StringOption(session_.get(), SSH_OPTIONS_KNOWNHOSTS));
  EXPECT_EQ(kSystemKnownHosts, StringOption(session_.get(), SSH_OPTIONS_GLOBAL_KNOWNHOSTS));
  EXPECT_TRUE(HostKeyOptionsPinned(session_.get(), options_.known_hosts));
  // Any host, through "Host *" too.
  Configure(HostSpec{{}, "other", {}});
  EXPECT_TRUE(HostKeyOptionsPinned(session_.get(), options_.known_hosts));
  // The check notices a change made after ConfigureSession.
  ssh_options_set(session_.get(), SSH_OPTIONS_KNOWNHOSTS, "/dev/null");
  EXPECT_FALSE(HostKeyOptionsPinned(session_.get(), options_.known_hosts));
}

TEST_F(SshOptionsTest, PercentInTheKnownHostsPathStaysLiteral) {
  options_.known_hosts = (dir_ / "known_%d_hosts").string();
  Configure(HostSpec{{}, "w7", {}});
  // Escaped for libssh's %-expansion at connect time, and still recognised as pinned.
  EXPECT_EQ((dir_ / "known_%%d_hosts").string(),
            StringOption(session_.get(), SSH_OPTIONS_KNOWNHOSTS));
  EXPECT_TRUE(HostKeyOptionsPinned(session_.get(), options_.known_hosts));
}

TEST_F(SshOptionsTest, ProxyCommandFromSshConfigIsHonoured) {
  SshTarget t = Configure(HostSpec{{}, "jumped", {}});
  EXPECT_NE(std::string::npos, t.proxy_command.find("bastion")) << t.proxy_command;
}

TEST_F(SshOptionsTest, Ipv6AddressesReachLibssh) {
  SshTarget t = Configure(HostSpec{{}, "2001:db8::7", 2222});
  EXPECT_EQ("2001:db8::7", t.address);
  EXPECT_EQ(2222u, t.port);
}

TEST_F(SshOptionsTest, UnreadableSshConfigNamesTheFileAndHost) {
  options_.ssh_config = (dir_ / "missing").string();
  try {
    Configure(HostSpec{{}, "w7", {}});
    // libssh 0.10 ignores a missing file; then nothing was taken from it.
    EXPECT_TRUE(HostKeyOptionsPinned(session_.get(), options_.known_hosts));
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("w7")) << e.what();
  }
}

TEST(SetSshOption, ARefusedValueNamesTheOptionAndTheHost) {
  Session s(ssh_new());
  try {
    SetSshOption(s.get(), SSH_OPTIONS_HOST, "bad host!", "host", "bad host!");
    FAIL() << "libssh accepted a bad host";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUnreachable, e.code());
    std::string m = e.what();
    EXPECT_NE(std::string::npos, m.find("cannot set host")) << m;
    EXPECT_NE(std::string::npos, m.find("bad host!")) << m;
  }
  int zero = 0;
  EXPECT_THROW(SetSshOption(s.get(), SSH_OPTIONS_PORT, &zero, "port", "h"), Error);
}

}  // namespace
}  // namespace podrun
