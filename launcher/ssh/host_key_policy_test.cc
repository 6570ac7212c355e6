#include "launcher/ssh/host_key_policy.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(HostKeyPolicy, Decisions) {
  EXPECT_EQ(HostKeyAction::kAccept, DecideHostKey(SSH_KNOWN_HOSTS_OK, false));
  EXPECT_EQ(HostKeyAction::kAccept, DecideHostKey(SSH_KNOWN_HOSTS_OK, true));
  EXPECT_EQ(HostKeyAction::kRecord, DecideHostKey(SSH_KNOWN_HOSTS_UNKNOWN, false));
  EXPECT_EQ(HostKeyAction::kRecord, DecideHostKey(SSH_KNOWN_HOSTS_NOT_FOUND, false));
  EXPECT_EQ(HostKeyAction::kRefuseUnknown, DecideHostKey(SSH_KNOWN_HOSTS_UNKNOWN, true));
  EXPECT_EQ(HostKeyAction::kRefuseUnknown, DecideHostKey(SSH_KNOWN_HOSTS_NOT_FOUND, true));
  // A changed key is refused whatever the strictness.
  EXPECT_EQ(HostKeyAction::kRefuseChanged, DecideHostKey(SSH_KNOWN_HOSTS_CHANGED, false));
  EXPECT_EQ(HostKeyAction::kRefuseChanged, DecideHostKey(SSH_KNOWN_HOSTS_OTHER, false));
  EXPECT_EQ(HostKeyAction::kError, DecideHostKey(SSH_KNOWN_HOSTS_ERROR, false));
}

TEST(HostKeyPolicy, RefusalNamesHostTypeAndFingerprint) {
  std::string m = HostKeyRefusal(HostKeyAction::kRefuseChanged, "10.0.0.5", "ssh-ed25519",
                                 "SHA256:abc", "/root/.ssh/known_hosts");
  EXPECT_NE(std::string::npos, m.find("10.0.0.5"));
  EXPECT_NE(std::string::npos, m.find("ssh-ed25519"));
  EXPECT_NE(std::string::npos, m.find("SHA256:abc"));
  EXPECT_NE(std::string::npos, m.find("ssh-keygen -R"));
}

TEST(HostKeyPolicy, ChangedKeyRefusalNamesThePinnedAndTheOfferedFingerprints) {
  std::string m =
      HostKeyRefusal(HostKeyAction::kRefuseChanged, "10.0.0.5", "ssh-ed25519", "SHA256:offered",
                     "/root/.ssh/known_hosts", "ssh-ed25519 SHA256:pinned");
  EXPECT_NE(std::string::npos, m.find("pins ssh-ed25519 SHA256:pinned")) << m;
  EXPECT_NE(std::string::npos, m.find("now offers ssh-ed25519 SHA256:offered")) << m;
}

// A key the VM published through the API and podrun pinned: the machine answering with another
// is not that VM. Removing the pin is never advised.
TEST(HostKeyPolicy, APublishedPinIsNeverAdvisedAway) {
  std::string m =
      HostKeyRefusal(HostKeyAction::kRefuseChanged, "10.0.0.5", "ssh-ed25519", "SHA256:offered",
                     "/root/.ssh/known_hosts", "ssh-ed25519 SHA256:pinned", /*published=*/true);
  EXPECT_NE(std::string::npos, m.find("pins ssh-ed25519 SHA256:pinned")) << m;
  EXPECT_NE(std::string::npos, m.find("now offers ssh-ed25519 SHA256:offered")) << m;
  EXPECT_NE(std::string::npos, m.find("the VM at this address published")) << m;
  EXPECT_NE(std::string::npos, m.find("not that VM")) << m;
  EXPECT_EQ(std::string::npos, m.find("ssh-keygen")) << m;
  EXPECT_EQ(std::string::npos, m.find("remove")) << m;
}

}  // namespace
}  // namespace podrun
