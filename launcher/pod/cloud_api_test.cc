// Tests of reading Google's APIs (Compute Engine, Cloud TPU) with gcloud's access: config-helper's
// answer read (what podrun may use, what it leaves to gcloud), real GETs through libcurl to an HTTP
// server in this process (the token in a header, each answer classified as gcloud's failures are),
// and a MIG's host keys and its other reads made with one gcloud call (a stand-in gcloud script
// counts them) or, when the API refuses the token, through gcloud.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "launcher/pod/cloud_api_access.h"
#include "launcher/pod/cloud_api_get.h"
#include "launcher/pod/mig_host_keys.h"
#include "launcher/pod/mig_reads.h"
#include "launcher/pod/tpu_reads.h"

namespace podrun {
namespace {

using std::chrono::system_clock;

constexpr const char* kEd0 = "AAAAC3NzaC1lZDI1NTE5AAAAIHaCyGXk5DzzT7rVPTixTi1S2xHlxujEdKoUWXEJ33FS";
constexpr const char* kEd1 = "AAAAC3NzaC1lZDI1NTE5AAAAIFz3pUq7SvQ0Kf3dEbbqzT0CJ0k1a8tY2c5vJ1a2b3c4";

// config-helper's JSON as gcloud 5xx prints it, with `properties` and `credential` inside.
std::string HelperJson(const std::string& properties, const std::string& credential) {
  return R"({"configuration": {"active_configuration": "default", "properties": )" + properties +
         R"(}, "credential": )" + credential + R"(, "sentinels": {}})";
}

TEST(CloudApiAccessTest, ConfigHelperGivesTheTokenEndpointCaFileProjectAndWhenToAskAgain) {
  const system_clock::time_point now = system_clock::from_time_t(1'800'000'000);
  std::string why;
  std::optional<CloudApiAccess> a = ParseGcloudConfigHelper(
      HelperJson(R"({"core": {"project": "my-proj", "custom_ca_certs_file": "/etc/ca.pem"}})",
                 R"({"access_token": "ya29.tok", "token_expiry": "2027-01-15T08:20:00Z"})"),
      now, &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ("https://compute.googleapis.com/compute/v1/", a->compute_endpoint);
  EXPECT_EQ("ya29.tok", a->token);
  EXPECT_EQ("/etc/ca.pem", a->ca_file);
  EXPECT_EQ("my-proj", a->project);
  // 2027-01-15T08:20:00Z is 1'800'000'000 + 1'200 s; asked again two minutes before.
  EXPECT_EQ(system_clock::from_time_t(1'800'000'000 + 1'200 - 120), a->expiry);

  // An access-token file's token has no expiry: asked again after five minutes. The override
  // gets its slash.
  a = ParseGcloudConfigHelper(
      HelperJson(R"({"api_endpoint_overrides": {"compute": "http://127.0.0.1:8080/compute/v1"}})",
                 R"({"access_token": "t", "token_expiry": null})"),
      now, &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ("http://127.0.0.1:8080/compute/v1/", a->compute_endpoint);
  EXPECT_EQ(now + std::chrono::minutes(5), a->expiry);
  EXPECT_EQ("", a->project);
  EXPECT_EQ("", a->quota_project);
  EXPECT_EQ("https://tpu.googleapis.com/", a->tpu_endpoint);

  // Another universe: only the API whose endpoint is given is read by podrun.
  a = ParseGcloudConfigHelper(
      HelperJson(R"({"core": {"universe_domain": "example.goog"}, "api_endpoint_overrides": )"
                 R"({"compute": "https://compute.example.goog/compute/v1/"}})",
                 R"({"access_token": "t"})"),
      now, &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ("https://compute.example.goog/compute/v1/", a->compute_endpoint);
  EXPECT_EQ("", a->tpu_endpoint);
  EXPECT_FALSE(Reaches(*a, CloudApi::kTpu));
  EXPECT_TRUE(Reaches(*a, CloudApi::kCompute));

  // A quota project, as gcloud sends it: its own, or core/project's for CURRENT_PROJECT.
  a = ParseGcloudConfigHelper(
      HelperJson(R"({"billing": {"quota_project": "bill-proj"}})", R"({"access_token": "t"})"), now,
      &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ("bill-proj", a->quota_project);
  a = ParseGcloudConfigHelper(
      HelperJson(
          R"({"billing": {"quota_project": "CURRENT_PROJECT"}, "core": {"project": "my-proj"}})",
          R"({"access_token": "t"})"),
      now, &why);
  ASSERT_TRUE(a) << why;
  EXPECT_EQ("my-proj", a->quota_project);
}

TEST(CloudApiAccessTest, WhatPodrunCannotHonourIsLeftToGcloudSayingWhy) {
  const system_clock::time_point now = system_clock::from_time_t(1'800'000'000);
  const std::string token = R"({"access_token": "t"})";
  struct Case {
    std::string json, why;
  } cases[] = {
      {HelperJson(R"({"proxy": {"address": "p", "port": "3128", "type": "http"}})", token),
       "proxy"},
      {HelperJson(R"({"context_aware": {"use_client_certificate": "True"}})", token),
       "client certificates"},
      {HelperJson(R"({"api_endpoint_overrides": {"compute": "http://10.0.0.9/compute/v1/"}})",
                  token),
       "neither https nor loopback"},
      {HelperJson(R"({"core": {"universe_domain": "example.goog"}})", token), "universe"},
      {HelperJson("{}", R"({"access_token": null})"), "no access token"},
      {HelperJson("{}", R"({"access_token": "a b"})"), "no access token"},
      {HelperJson(R"({"billing": {"quota_project": "x\ny"}})", token), "quota_project"},
      {HelperJson("{}", R"({"access_token": "t", "token_expiry": "2027-01-15T07:40:00Z"})"),
       "expires"},
      {"ERROR: not json", "no JSON"},
  };
  for (const Case& c : cases) {
    std::string why;
    EXPECT_FALSE(ParseGcloudConfigHelper(c.json, now, &why)) << c.json;
    EXPECT_NE(std::string::npos, why.find(c.why)) << why;
  }
}

// An HTTP/1.1 server on loopback answering each request with what `answer` gives for its
// target, one connection at a time, keeping what it was asked.
class TestApiServer {
 public:
  using Answer = std::function<std::pair<int, std::string>(const std::string& target)>;
  explicit TestApiServer(Answer answer) : answer_(std::move(answer)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "test server: no socket";
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TestApiServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  // Each request's head ("GET /path HTTP/1.1\r\nHeader: ...").
  std::vector<std::string> Requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      const size_t sp = head.find(' ');
      const std::string target = head.substr(sp + 1, head.find(' ', sp + 1) - sp - 1);
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(head);
      }
      const auto [status, body] = answer_(target);
      const std::string reply =
          "HTTP/1.1 " + std::to_string(status) +
          " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
          "\r\nConnection: close\r\n\r\n" + body;
      if (::write(c, reply.data(), reply.size()) < 0) ADD_FAILURE() << "test server: write";
      ::close(c);
    }
  }

  Answer answer_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_ = false;
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

std::string GuestAttributes(const std::string& key) {
  return R"({"kind": "compute#guestAttributes", "queryPath": "hostkeys/", "queryValue": )" +
         (key.empty() ? std::string("{}")
                      : R"({"items": [{"namespace": "hostkeys", "key": "ssh-ed25519", "value": ")" +
                            key + R"("}]})") +
         "}";
}

std::string ApiError(int code, const std::string& status, const std::string& message) {
  return R"({"error": {"code": )" + std::to_string(code) + R"(, "message": ")" + message +
         R"(", "status": ")" + status + R"("}})";
}

TEST(CloudApiGetTest, TheTokenGoesInAHeaderAndEachAnswerIsClassifiedAsGcloudsFailuresAre) {
  TestApiServer server([](const std::string& target) -> std::pair<int, std::string> {
    if (target.starts_with("/compute/v1/ok")) return {200, R"({"fine": true})"};
    if (target.starts_with("/compute/v1/busy")) return {503, ApiError(503, "UNAVAILABLE", "later")};
    if (target.starts_with("/compute/v1/denied")) {
      return {403, ApiError(403, "PERMISSION_DENIED", "no compute.instances.getGuestAttributes")};
    }
    if (target.starts_with("/compute/v1/stale")) return {401, ApiError(401, "UNAUTHENTICATED", "")};
    return {404, ApiError(404, "NOT_FOUND", "gone")};
  });
  CloudApiAccess access;
  access.compute_endpoint = "http://127.0.0.1:" + std::to_string(server.port()) + "/compute/v1/";
  access.token = "tok-123";
  access.quota_project = "bill-proj";

  EXPECT_EQ(R"({"fine": true})", CloudApiGet(access, CloudApi::kCompute, "ok?x=1", "mig m"));
  ASSERT_EQ(1u, server.Requests().size());
  EXPECT_TRUE(server.Requests()[0].starts_with("GET /compute/v1/ok?x=1 HTTP/1.1\r\n"));
  EXPECT_NE(std::string::npos, server.Requests()[0].find("\r\nAuthorization: Bearer tok-123\r\n"));
  EXPECT_NE(std::string::npos, server.Requests()[0].find("\r\nX-Goog-User-Project: bill-proj\r\n"));
  access.quota_project.clear();

  EXPECT_EQ(std::nullopt, CloudApiGet(access, CloudApi::kCompute, "missing", "mig m"));
  try {
    CloudApiGet(access, CloudApi::kCompute, "busy", "mig m");
    ADD_FAILURE() << "a 503 returned";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kTransient, e.failure());
    EXPECT_EQ("HTTP 503", e.reason());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("mig m: ")) << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find("UNAVAILABLE: later")) << e.what();
  }
  try {
    CloudApiGet(access, CloudApi::kCompute, "denied", "mig m");
    ADD_FAILURE() << "a 403 returned";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kFailed, e.failure());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("PERMISSION_DENIED")) << e.what();
  }
  EXPECT_THROW(CloudApiGet(access, CloudApi::kCompute, "stale", "mig m"), CloudApiTokenRefused);

  // Nobody listening: the network's bad minute, tried again by recovery.
  CloudApiAccess closed = access;
  closed.compute_endpoint = "http://127.0.0.1:1/compute/v1/";
  try {
    CloudApiGet(closed, CloudApi::kCompute, "ok", "mig m");
    ADD_FAILURE() << "a refused connection returned";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kTransient, e.failure());
  }
}

TEST(CloudApiGetTest, AListsPagesAreMergedIntoOneListAsGcloudPrintsIt) {
  TestApiServer server([](const std::string& target) -> std::pair<int, std::string> {
    if (target.find("pageToken=") == std::string::npos) {
      return {200,
              R"({"managedInstances": [{"name": "a"}, {"name": "b"}], "nextPageToken": "t/2 x"})"};
    }
    if (target.find("pageToken=t%2F2%20x") != std::string::npos) {
      return {200, R"({"managedInstances": [{"name": "c"}]})"};
    }
    return {400, ApiError(400, "INVALID_ARGUMENT", "bad page token")};
  });
  CloudApiAccess access;
  access.compute_endpoint = "http://127.0.0.1:" + std::to_string(server.port()) + "/compute/v1/";
  access.token = "t";
  const std::optional<std::string> list =
      CloudApiList(access, CloudApi::kCompute,
                   "projects/p/zones/z/instanceGroupManagers/g/listManagedInstances?maxResults=500",
                   "managedInstances", /*post=*/true, "mig g");
  ASSERT_TRUE(list);
  EXPECT_EQ(R"([{"name":"a"},{"name":"b"},{"name":"c"}])", *list);
  ASSERT_EQ(2u, server.Requests().size());
  for (const std::string& head : server.Requests()) {
    EXPECT_TRUE(
        head.starts_with("POST /compute/v1/projects/p/zones/z/instanceGroupManagers/g/"
                         "listManagedInstances?maxResults=500"))
        << head;
  }
}

// A MIG's keys with a stand-in gcloud (PODRUN_GCLOUD): config-helper points at the test server;
// get-guest-attributes answers kEd1 for any VM. Every call is logged.
class SliceReadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("compute-api-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ForgetGcloudApiAccess();
  }
  void TearDown() override {
    ::unsetenv("PODRUN_GCLOUD");
    ForgetGcloudApiAccess();
    std::filesystem::remove_all(dir_);
  }
  // `helper_fails`: config-helper exits 1 as gcloud does when nobody is logged in.
  void StandInGcloud(int port, bool helper_fails = false) {
    const std::filesystem::path gcloud = dir_ / "gcloud";
    std::ofstream(gcloud)
        << "#!/bin/sh\necho \"$*\" >> '" << (dir_ / "calls").string() << "'\n"
        << "case \"$*\" in\n"
        << (helper_fails ? "  *config-helper*) echo 'ERROR: (gcloud.config.config-helper) You do "
                           "not currently have an active account selected.' >&2; exit 1 ;;\n"
                         : "")
        << "  *config-helper*) echo '"
        << HelperJson(R"({"api_endpoint_overrides": {"compute": "http://127.0.0.1:)" +
                          std::to_string(port) + R"(/compute/v1/", "tpu": "http://127.0.0.1:)" +
                          std::to_string(port) + R"(/"}, "core": {"project": "proj-one"}})",
                      R"({"access_token": "tok-9", "token_expiry": null})")
        << "' ;;\n"
        << "  *get-guest-attributes*) echo '[{\"namespace\": \"hostkeys\", \"key\": "
           "\"ssh-ed25519\", \"value\": \""
        << kEd1 << "\"}]' ;;\n"
        << "esac\n";
    ::chmod(gcloud.c_str(), 0700);
    ::setenv("PODRUN_GCLOUD", gcloud.c_str(), 1);
  }
  size_t CallsWith(const std::string& words) const {
    std::ifstream in(dir_ / "calls");
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(words) != std::string::npos;
    return n;
  }
  static std::vector<SourceWorker> Vms(int n) {
    std::vector<SourceWorker> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out[static_cast<size_t>(i)].name = "vm-" + std::to_string(i);
    return out;
  }

  std::filesystem::path dir_;
  const SliceRef mig_{"slice-a", "us-central1-a", std::nullopt};
};

TEST_F(SliceReadsTest, AllVmsAreReadThroughTheApiWithOneGcloudCallKeptForTheNextRead) {
  TestApiServer server([](const std::string& target) -> std::pair<int, std::string> {
    const std::string base = "/compute/v1/projects/proj-one/zones/us-central1-a/instances/";
    const std::string query = "/getGuestAttributes?queryPath=hostkeys%2F";
    if (target == base + "vm-0" + query) return {200, GuestAttributes(kEd0)};
    if (target == base + "vm-1" + query) return {200, GuestAttributes("")};  // not yet
    return {404, ApiError(404, "NOT_FOUND", "no hostkeys/")};                // not yet either
  });
  StandInGcloud(server.port());
  TpuHostKeys keys = ReadHostKeys(mig_, "mig slice-a", Vms(3));
  ASSERT_EQ(1u, keys.size());
  ASSERT_EQ(1u, keys[0].size());
  EXPECT_EQ((PublishedHostKey{"ssh-ed25519", kEd0}), keys[0][0]);
  EXPECT_EQ(3u, server.Requests().size());
  EXPECT_EQ(1u, CallsWith("config config-helper"));
  EXPECT_EQ(0u, CallsWith("get-guest-attributes"));
  for (const std::string& head : server.Requests()) {
    EXPECT_NE(std::string::npos, head.find("\r\nAuthorization: Bearer tok-9\r\n")) << head;
  }

  keys = ReadHostKeys(mig_, "mig slice-a", Vms(3));
  EXPECT_EQ(1u, keys.size());
  EXPECT_EQ(6u, server.Requests().size());
  EXPECT_EQ(1u, CallsWith("config config-helper"));  // the token was kept
}

TEST_F(SliceReadsTest, ATokenTheApiRefusesLeavesTheReadToGcloudAndIsAskedForAgainNextTime) {
  TestApiServer server([](const std::string&) -> std::pair<int, std::string> {
    return {401, ApiError(401, "UNAUTHENTICATED", "Request had invalid authentication")};
  });
  StandInGcloud(server.port());
  const SliceRef mig{"slice-a", "us-central1-a", "proj-two"};
  TpuHostKeys keys = ReadHostKeys(mig, "mig slice-a", Vms(2));
  ASSERT_EQ(2u, keys.size());
  EXPECT_EQ((PublishedHostKey{"ssh-ed25519", kEd1}), keys[1][0]);
  EXPECT_EQ(2u, CallsWith("get-guest-attributes"));
  EXPECT_EQ(2u, CallsWith("--project proj-two"));  // the slice's own project, not gcloud's
  EXPECT_NE(std::string::npos, server.Requests().at(0).find("/projects/proj-two/"))
      << server.Requests()[0];

  ReadHostKeys(mig, "mig slice-a", Vms(2));
  EXPECT_EQ(2u, CallsWith("config config-helper"));
}

TEST_F(SliceReadsTest, TheSlicesInstancesAndPartsAreReadThroughTheApiAsGcloudPrintsThem) {
  TestApiServer server([](const std::string& target) -> std::pair<int, std::string> {
    const std::string project = "/compute/v1/projects/proj-one/";
    if (target == project + "global/instanceTemplates/slice-a-podrun") {
      return {200, R"({"name": "slice-a-podrun", "description": "podrun: x"})"};
    }
    if (target.starts_with(project + "zones/us-central1-a/instanceGroupManagers/slice-a/"
                                     "listManagedInstances")) {
      return {200, R"({"managedInstances": [{"name": "vm-0", "instanceStatus": "RUNNING"}]})"};
    }
    if (target.starts_with(project + "zones/us-central1-a/instances?")) {
      return {200, R"({"items": [{"name": "vm-0", "status": "RUNNING"}]})"};
    }
    return {404, ApiError(404, "NOT_FOUND", "no such thing")};
  });
  StandInGcloud(server.port());
  EXPECT_EQ(R"({"name": "slice-a-podrun", "description": "podrun: x"})",
            ReadMigPart(mig_, /*policy=*/false, "mig slice-a"));
  EXPECT_EQ(std::nullopt, ReadMigPart(mig_, /*policy=*/true, "mig slice-a"));
  EXPECT_EQ(R"([{"instanceStatus":"RUNNING","name":"vm-0"}])",
            ReadMigManagedInstances(mig_, "mig slice-a"));
  EXPECT_EQ(R"([{"name":"vm-0","status":"RUNNING"}])", ReadMigVms(mig_, {"vm-0", "vm-1"}, "mig"));
  const std::vector<std::string> asked = server.Requests();
  ASSERT_EQ(4u, asked.size());
  EXPECT_TRUE(asked[1].starts_with(
      "GET /compute/v1/projects/proj-one/regions/us-central1/resourcePolicies/slice-a-podrun "))
      << asked[1];
  // The VMs by name, filtered by the API: name eq "(vm-0|vm-1)".
  EXPECT_NE(std::string::npos, asked[3].find("filter=name%20eq%20%22%28vm-0%7Cvm-1%29%22"))
      << asked[3];
  EXPECT_EQ(1u, CallsWith("config config-helper"));
  EXPECT_EQ(1u, CallsWith(""));  // nothing else was asked of gcloud
}

TEST_F(SliceReadsTest, AConfigHelperThatFailsLeavesTheReadsToGcloudAndIsNotAskedAtEachRead) {
  StandInGcloud(/*port=*/1, /*helper_fails=*/true);
  TpuHostKeys keys = ReadHostKeys(mig_, "mig slice-a", Vms(2));
  EXPECT_EQ(2u, keys.size());
  keys = ReadHostKeys(mig_, "mig slice-a", Vms(2));
  EXPECT_EQ(2u, keys.size());
  EXPECT_EQ(4u, CallsWith("get-guest-attributes"));
  EXPECT_EQ(1u, CallsWith("config config-helper"));
}

TEST_F(SliceReadsTest, ATpuNodeItsQueuedResourceAndItsKeysAreReadThroughTheTpuApi) {
  TestApiServer server([](const std::string& target) -> std::pair<int, std::string> {
    const std::string base = "/v2/projects/proj-one/locations/us-central2-b/";
    if (target == base + "nodes/node-1") return {200, R"({"name": "node-1", "state": "READY"})"};
    if (target == base + "nodes/node-1:getGuestAttributes") {
      return {200, R"({"guestAttributes": [{"queryPath": "hostkeys/", "workerId": "0"}]})"};
    }
    return {404, ApiError(404, "NOT_FOUND", "no such thing")};
  });
  StandInGcloud(server.port());
  const SliceRef node{"node-1", "us-central2-b", std::nullopt};
  EXPECT_EQ(R"({"name": "node-1", "state": "READY"})", ReadTpuNode(node, "tpu node-1"));
  EXPECT_EQ(R"({"name": "node-1", "state": "READY"})", ReadExistingTpuNode(node, "tpu node-1"));
  EXPECT_EQ(std::nullopt, ReadQueuedResource(node, "tpu node-1"));
  EXPECT_NE(std::string::npos, ReadTpuGuestAttributes(node, "tpu node-1").find("hostkeys/"));
  const SliceRef gone{"node-2", "us-central2-b", std::nullopt};
  EXPECT_EQ(std::nullopt, ReadTpuNode(gone, "tpu node-2"));
  try {
    ReadExistingTpuNode(gone, "tpu node-2");
    ADD_FAILURE() << "a missing node was read";
  } catch (const GcloudError& e) {
    EXPECT_EQ(GcloudFailure::kNotFound, e.failure());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("node-2")) << e.what();
  }
  const std::vector<std::string> asked = server.Requests();
  ASSERT_EQ(6u, asked.size());
  EXPECT_TRUE(asked[2].starts_with(
      "GET /v2/projects/proj-one/locations/us-central2-b/queuedResources/node-1 "))
      << asked[2];
  EXPECT_TRUE(asked[3].starts_with(
      "POST /v2/projects/proj-one/locations/us-central2-b/nodes/node-1:getGuestAttributes "))
      << asked[3];
  EXPECT_EQ(1u, CallsWith(""));  // config-helper, and nothing else
}

}  // namespace
}  // namespace podrun
