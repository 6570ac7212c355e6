#include "launcher/agent_link/agent_bootstrap.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

TEST(AgentAnnouncement, ReadyLineAmongOtherOutput) {
  std::string other;
  auto a = ParseAnnouncement(
      "Welcome to the TPU VM\nPODRUN-AGENT READY 1 0.2.0 /home/u/.podrun/run/agent.sock\nbye\n",
      &other);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->protocol_version, 1u);
  EXPECT_EQ(a->agent_version, "0.2.0");
  EXPECT_EQ(a->socket_path, "/home/u/.podrun/run/agent.sock");
  // What the login shell printed is kept for the user, the announcement is not.
  EXPECT_EQ(other, "Welcome to the TPU VM\nbye\n");
}

TEST(AgentAnnouncement, NoneFound) {
  std::string other;
  EXPECT_FALSE(ParseAnnouncement("bash: podrun-agent: command not found\n", &other));
  EXPECT_EQ(other, "bash: podrun-agent: command not found\n");
  EXPECT_FALSE(ParseAnnouncement("", &other));
}

TEST(AgentAnnouncement, MissingAgentLineIsNotShownToTheUser) {
  std::string other;
  EXPECT_FALSE(ParseAnnouncement("PODRUN-AGENT MISSING\n", &other));
  EXPECT_EQ(other, "");
}

TEST(AgentAnnouncement, ErrorLineCarriesTheAgentsReason) {
  std::string other;
  try {
    ParseAnnouncement("PODRUN-AGENT ERROR cannot create /home/u/.podrun: No space left\n", &other);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUnreachable);
    EXPECT_NE(std::string(e.what()).find("cannot create /home/u/.podrun: No space left"),
              std::string::npos)
        << e.what();
  }
}

TEST(AgentAnnouncement, MalformedReadyLineIsAnError) {
  std::string other;
  EXPECT_THROW(ParseAnnouncement("PODRUN-AGENT READY 1\n", &other), Error);
  EXPECT_THROW(ParseAnnouncement("PODRUN-AGENT READY x 0.1 /s\n", &other), Error);
}

TEST(AgentAnnouncement, PrefixMustStartTheLine) {
  std::string other;
  EXPECT_FALSE(ParseAnnouncement("echo PODRUN-AGENT READY 1 0.1 /s\n", &other));
}

}  // namespace
}  // namespace podrun
