// Tests of jump chain parsing: -J values and libssh's ProxyJump command read back.
#include "launcher/ssh/jump_spec.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

TEST(JumpSpecTest, OneHopWithUserAndPort) {
  JumpChain chain = ParseJumpChain("root@10.0.0.2:2222");
  ASSERT_EQ(1u, chain.size());
  EXPECT_EQ((HostSpec{"root", "10.0.0.2", 2222}), chain[0]);
}

TEST(JumpSpecTest, ChainKeepsOrderFirstHopFirst) {
  JumpChain chain = ParseJumpChain("bastion,admin@inner:22,[::1]:2200");
  ASSERT_EQ(3u, chain.size());
  EXPECT_EQ("bastion", chain[0].host);
  EXPECT_EQ((HostSpec{"admin", "inner", 22}), chain[1]);
  EXPECT_EQ((HostSpec{std::nullopt, "::1", 2200}), chain[2]);
  EXPECT_EQ("bastion,admin@inner:22,[::1]:2200", JumpChainToString(chain));
}

TEST(JumpSpecTest, NoneIsAnEmptyChain) {
  EXPECT_TRUE(ParseJumpChain("none").empty());
  EXPECT_TRUE(ParseJumpChain("NONE").empty());
  EXPECT_EQ("none", JumpChainToString({}));
}

TEST(JumpSpecTest, BadEntriesAreUsageErrors) {
  for (const char* bad :
       {"", "a,,b", "a,", "-oProxyCommand=x", "h:0", "h:99999", "a b", "u;rm@h"}) {
    try {
      ParseJumpChain(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code()) << bad;
    }
  }
}

TEST(JumpSpecTest, LibsshProxyJumpCommandIsReadBack) {
  // What libssh 0.10 makes of `ProxyJump w0`, `ProxyJump admin@b:2222` and `ProxyJump j1,j2,j3`.
  auto one = JumpChainOfProxyCommand("ssh -W '[%h]:%p' w0");
  ASSERT_TRUE(one);
  EXPECT_EQ((JumpChain{HostSpec{std::nullopt, "w0", std::nullopt}}), *one);

  auto full = JumpChainOfProxyCommand("ssh -l admin -p 2222 -W '[%h]:%p' b");
  ASSERT_TRUE(full);
  EXPECT_EQ((JumpChain{HostSpec{"admin", "b", 2222}}), *full);

  auto chain = JumpChainOfProxyCommand("ssh -J j2,u@j3:23 -W '[%h]:%p' j1");
  ASSERT_TRUE(chain);
  ASSERT_EQ(3u, chain->size());
  EXPECT_EQ("j1", (*chain)[0].host);
  EXPECT_EQ("j2", (*chain)[1].host);
  EXPECT_EQ((HostSpec{"u", "j3", 23}), (*chain)[2]);

  auto v6 = JumpChainOfProxyCommand("ssh -p 22 -W '[%h]:%p' fe80::1");
  ASSERT_TRUE(v6);
  EXPECT_EQ((HostSpec{std::nullopt, "fe80::1", 22}), (*v6)[0]);
}

TEST(JumpSpecTest, OtherProxyCommandsStayCommands) {
  for (const char* command :
       {"", "none", "ssh -W %h:%p bastion", "ssh -W '[%h]:%p' bastion extra",
        "nc -x proxy:1080 %h %p", "gcloud compute start-iap-tunnel %n %p --listen-on-stdin",
        "ssh -o Foo=bar -W '[%h]:%p' b", "/usr/bin/ssh -W '[%h]:%p' b"}) {
    EXPECT_FALSE(JumpChainOfProxyCommand(command)) << command;
  }
}

}  // namespace
}  // namespace podrun
