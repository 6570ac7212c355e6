// Tests of reading the host keys TPU VMs publish (guest attributes), in the shapes gcloud and the
// API give them.
#include "launcher/pod/tpu_host_keys.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "launcher/base/error.h"

namespace podrun {
namespace {

constexpr const char* kEd0 = "AAAAC3NzaC1lZDI1NTE5AAAAIHaCyGXk5DzzT7rVPTixTi1S2xHlxujEdKoUWXEJ33FS";
constexpr const char* kEd1 = "AAAAC3NzaC1lZDI1NTE5AAAAIFz3pUq7SvQ0Kf3dEbbqzT0CJ0k1a8tY2c5vJ1a2b3c4";
// Blobs in SSH's wire format whose first string is their type (the key itself is 'x's).
constexpr const char* kEcdsa =
    "AAAAE2VjZHNhLXNoYTItbmlzdHAyNTZ4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eA==";
constexpr const char* kRsa = "AAAAB3NzaC1yc2F4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eHh4eA==";

TEST(TpuHostKeys, ReadsWhatGcloud528Prints) {
  // Seen from the real gcloud 528 against scripts/fake-tpu-api (docs/gcloud-verified.md).
  const std::string json = std::string(R"([
    {"key": "hostname", "namespace": "hostkeys", "value": "t1v-n-35690264-w-0", "worker_id": 0},
    {"key": "ssh-ed25519", "namespace": "hostkeys", "value": ")") +
                           kEd0 + R"(", "worker_id": 0},
    {"key": "hostname", "namespace": "hostkeys", "value": "t1v-n-35690264-w-1", "worker_id": 1},
    {"key": "ssh-ed25519", "namespace": "hostkeys", "value": ")" +
                           kEd1 + R"(", "worker_id": 1}
  ])";
  TpuHostKeys keys = ParseTpuHostKeys(json, "tpu n");
  ASSERT_EQ(2u, keys.size());
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd0}}), keys[0]);
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd1}}), keys[1]);
}

TEST(TpuHostKeys, ReadsFlattenedItemsWithAQueryPath) {
  // `gcloud compute tpus tpu-vm get-guest-attributes NODE --format=json`: flattened items.
  const std::string json = std::string(R"([
    {"queryPath": "hostkeys/", "key": "hostname", "value": "t1v-n-abc-w-0", "workerId": "0"},
    {"queryPath": "hostkeys/", "key": "ssh-ed25519", "value": ")") +
                           kEd0 + R"(", "workerId": "0"},
    {"queryPath": "hostkeys/", "key": "ecdsa-sha2-nistp256", "value": ")" +
                           kEcdsa + R"(", "workerId": "0"},
    {"queryPath": "hostkeys/", "key": "ssh-ed25519", "value": ")" +
                           kEd1 + R"(", "workerId": "1"},
    {"queryPath": "guestInventory/", "key": "ssh-rsa", "value": "AAAAB3Nz", "workerId": "2"},
    {"queryPath": "hostkeys/", "key": "hostname", "value": "t1v-n-abc-w-3", "workerId": "3"}
  ])";
  TpuHostKeys keys = ParseTpuHostKeys(json, "tpu n");
  ASSERT_EQ(2u, keys.size());
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd0}, {"ecdsa-sha2-nistp256", kEcdsa}}),
            keys[0]);
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd1}}), keys[1]);
  EXPECT_FALSE(keys.contains(2));  // another namespace
  EXPECT_FALSE(keys.contains(3));  // a hostname only: no key
}

TEST(TpuHostKeys, ReadsTheApisShape) {
  // Cloud TPU v2 nodes.getGuestAttributes: guestAttributes[] {queryPath, queryValue.items[],
  // workerId}.
  const std::string json = std::string(R"({"guestAttributes": [
    {"queryPath": "", "workerId": "0", "queryValue": {"items": [
      {"namespace": "hostkeys", "key": "hostname", "value": "t1v-n-abc-w-0"},
      {"namespace": "hostkeys", "key": "ssh-ed25519", "value": ")") +
                           kEd0 + R"("},
      {"namespace": "guestInventory", "key": "ssh-rsa", "value": "AAAAB3Nz"}]}},
    {"queryPath": "hostkeys/", "workerId": "1", "queryValue": {"items": [
      {"key": "ssh-ed25519", "value": ")" +
                           kEd1 + R"("},
      {"namespace": "hostkeys", "key": "ssh-rsa", "value": "not base64!"}]}}]})";
  TpuHostKeys keys = ParseTpuHostKeys(json, "tpu n");
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd0}}), keys[0]);
  EXPECT_EQ((std::vector<PublishedHostKey>{{"ssh-ed25519", kEd1}}), keys[1]);
  EXPECT_TRUE(ParseTpuHostKeys("[]", "tpu n").empty());
  EXPECT_TRUE(ParseTpuHostKeys("{}", "tpu n").empty());
}

// What a VM publishes is written into known_hosts as it is: only OpenSSH's exact key types and
// base64 keys of that type are taken, a bounded number per worker.
TEST(TpuHostKeys, HostileTypesAndValuesAreNotTaken) {
  EXPECT_TRUE(IsPublishedHostKey("ssh-ed25519", kEd0));
  EXPECT_TRUE(IsPublishedHostKey("ecdsa-sha2-nistp256", kEcdsa));
  EXPECT_TRUE(IsPublishedHostKey("ssh-rsa", kRsa));
  const std::string ed0 = kEd0;
  for (const auto& [type, value] : std::vector<std::pair<std::string, std::string>>{
           {"ssh-ed25519\n10.6.6.6 ssh-ed25519", ed0},  // a newline adds a line
           {"@cert-authority", ed0},                    // a marker line
           {"@cert-authority * ssh-ed25519", ed0},
           {"ssh-ed25519 ", ed0},
           {" ssh-ed25519", ed0},
           {"ssh-evil", ed0},  // passed a prefix check
           {"ssh-ed25519-cert-v01@openssh.com", ed0},
           {"ecdsa-sha2-nistp", ed0},
           {"ssh-dss", ed0},
           {"SSH-ED25519", ed0},
           {"ssh-ed25519", ed0 + "\n@cert-authority * ssh-ed25519 " + ed0},
           {"ssh-ed25519", ed0 + " comment"},
           {"ssh-ed25519", ed0 + "\t"},
           {"ssh-ed25519", ed0 + "\r"},
           {"ssh-ed25519", std::string("AAAA\0") + ed0},
           {"ssh-ed25519", "AA=A" + ed0},  // padding inside
           {"ssh-ed25519", ed0.substr(0, 67)},
           {"ssh-ed25519", ""},
           {"ssh-ed25519", kRsa},  // a key of another type
           {"ecdsa-sha2-nistp384", kEcdsa},
           {"ssh-rsa", std::string(9000, 'A')},  // too long
       }) {
    EXPECT_FALSE(IsPublishedHostKey(type, value))
        << "type '" << type << "' value '" << value << "'";
    const nlohmann::json doc = {
        {{"namespace", "hostkeys"}, {"key", type}, {"value", value}, {"worker_id", 0}}};
    EXPECT_TRUE(ParseTpuHostKeys(doc.dump(), "tpu n").empty()) << doc.dump();
  }
  // A worker publishing many keys: at most kMaxHostKeysPerWorker are taken.
  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 40; ++i) {
    std::string key = "AAAAC3NzaC1lZDI1NTE5AAAAI" + std::string(43, 'A');
    key[30] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"[i];
    ASSERT_TRUE(IsPublishedHostKey("ssh-ed25519", key)) << key;
    many.push_back(
        {{"namespace", "hostkeys"}, {"key", "ssh-ed25519"}, {"value", key}, {"worker_id", 1}});
  }
  const TpuHostKeys keys = ParseTpuHostKeys(many.dump(), "tpu n");
  ASSERT_EQ(1u, keys.size());
  EXPECT_EQ(kMaxHostKeysPerWorker, keys.at(1).size());
}

TEST(TpuHostKeys, SomethingElseIsAnErrorNamingTheNode) {
  try {
    ParseTpuHostKeys("ERROR: not json", "tpu node-7 (zone z)");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("tpu node-7 (zone z)")) << e.what();
  }
  EXPECT_THROW(ParseTpuHostKeys(R"({"items": 3})", "n"), Error);
  EXPECT_THROW(
      ParseTpuHostKeys(R"([{"key": "ssh-ed25519", "value": "AAAA", "workerId": "x"}])", "n"),
      Error);
}

}  // namespace
}  // namespace podrun
