// Tests of reading gcloud's Node JSON: endpoints in order, external and internal addresses,
// states, and answers that are not a node.
#include "launcher/pod/tpu_node.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"

namespace podrun {
namespace {

constexpr char kNode[] = R"({
  "name": "projects/p/locations/us-central2-b/nodes/node-1",
  "acceleratorType": "v4-32",
  "state": "READY",
  "networkEndpoints": [
    {"ipAddress": "10.130.0.2", "port": 8470,
     "accessConfig": {"externalIp": "34.1.2.3"}},
    {"ipAddress": "10.130.0.3", "port": 8470},
    {"ipAddress": "10.130.0.4", "port": 8470, "accessConfig": {}},
    {"ipAddress": "10.130.0.5", "port": 8470, "accessConfig": {"externalIp": "34.1.2.6"}}
  ],
  "health": "HEALTHY"
})";

TEST(TpuNodeTest, ReadsEndpointsInOrderWithTheirAddresses) {
  TpuNode node = ParseTpuNode(kNode, "tpu node-1");
  EXPECT_EQ(node.name, "node-1");
  EXPECT_EQ(node.state, "READY");
  EXPECT_EQ(node.accelerator_type, "v4-32");
  ASSERT_EQ(node.endpoints.size(), 4u);
  EXPECT_EQ(node.endpoints[0].internal_ip, "10.130.0.2");
  EXPECT_EQ(node.endpoints[0].external_ip, "34.1.2.3");
  EXPECT_FALSE(node.endpoints[1].external_ip);
  EXPECT_FALSE(node.endpoints[2].external_ip);
  EXPECT_EQ(node.endpoints[3].external_ip, "34.1.2.6");
}

TEST(TpuNodeTest, AnswersThatAreNotANodeAreErrorsNamingTheNode) {
  auto message = [](const std::string& json) {
    try {
      ParseTpuNode(json, "tpu node-9");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUnreachable);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("not json").find("tpu node-9: gcloud's answer is not JSON"), std::string::npos);
  EXPECT_NE(message("[]").find("is not a TPU node"), std::string::npos);
  // A node being created has no endpoints yet: read, with its state (the caller refuses it).
  EXPECT_EQ(ParseTpuNode(R"({"name": "n", "state": "CREATING"})", "n").state, "CREATING");
  EXPECT_NE(message(R"({"state": "READY"})").find("no networkEndpoints"), std::string::npos);
  EXPECT_NE(message(R"({"state": "READY", "networkEndpoints": [{"port": 1}]})")
                .find("no ipAddress for worker 0"),
            std::string::npos);
  // Found by fuzz/tpu_node: a field of another type was a json type_error, not our Error.
  EXPECT_NE(message(R"({"name": "n", "state": 5})").find("state that is not a string"),
            std::string::npos);
  EXPECT_NE(message(R"({"name": 5})").find("name that is not a string"), std::string::npos);
}

TEST(TpuNodeTest, AddressesPassTheSameRulesAsHosts) {
  auto message = [](const std::string& ip, const std::string& external) {
    try {
      ParseTpuNode(R"({"state": "READY", "networkEndpoints": [{"ipAddress": ")" + ip +
                       R"(", "accessConfig": {"externalIp": ")" + external + R"("}}]})",
                   "tpu n");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::kUnreachable);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message("10.0.0.2", "34.1.2.3"), "");
  EXPECT_EQ(message("fe80::1", ""), "");
  // These reach ssh's ProxyCommand (run by a shell), exportfs and sshfs.
  EXPECT_NE(message("-oProxyCommand=x", "").find("bad ipAddress for worker 0"), std::string::npos);
  EXPECT_NE(message("10.0.0.2;reboot", "").find("bad ipAddress"), std::string::npos);
  EXPECT_NE(message("10.0.0.2", "1.2.3.4 x").find("bad externalIp for worker 0"),
            std::string::npos);
}

}  // namespace
}  // namespace podrun
