#include "launcher/connect/job_pod.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "launcher/base/error.h"

namespace podrun {
namespace {

Pod DiscoveredPod() {
  Pod pod;
  pod.cloud_tpu = true;
  pod.slices = 2;
  pod.sources.push_back({PodSourceKind::kMig, {"slice-a", "zone-b", "proj-1"}});
  pod.sources.push_back({PodSourceKind::kTpuNode, {"node-b", "zone-a", std::nullopt}});
  for (int i = 0; i < 2; ++i) {
    PodWorker w;
    w.index = i;
    w.host.host = "10.0.0." + std::to_string(i + 1);
    w.slice = i;
    pod.workers.push_back(w);
  }
  return pod;
}

JobRecord RecordOf(const std::string& options_json) {
  JobRecord job;
  job.id = "20261128-000000-abcd";
  job.options_json = options_json;
  job.hosts = {{0, "", "10.0.0.1", 0, "10.0.0.1"}, {1, "", "10.0.0.2", 0, "10.0.0.2"}};
  return job;
}

// One list of sources in slice order, each with its kind, kept and read back as it was.
TEST(JobPodTest, TheRecordKeepsOneListOfSourcesInSliceOrderWithTheirKinds) {
  const Pod pod = DiscoveredPod();
  const nlohmann::json j = nlohmann::json::parse(PodOptionsJson(pod, ""));
  ASSERT_EQ(2u, j["sources"].size()) << j.dump();
  EXPECT_EQ("mig", j["sources"][0]["kind"]);
  EXPECT_EQ("proj-1", j["sources"][0]["project"]);
  EXPECT_EQ("tpu", j["sources"][1]["kind"]);
  EXPECT_FALSE(j["sources"][1].contains("project"));
  std::filesystem::path root;
  const Pod back = PodOfJob(RecordOf(j.dump()), &root);
  ASSERT_EQ(2u, back.sources.size());
  EXPECT_EQ(PodSourceKind::kMig, back.sources[0].kind);
  EXPECT_EQ("slice-a", back.sources[0].query.name);
  EXPECT_EQ("zone-b", back.sources[0].query.zone);
  EXPECT_EQ("proj-1", back.sources[0].query.project.value_or(""));
  EXPECT_EQ(PodSourceKind::kTpuNode, back.sources[1].kind);
  EXPECT_FALSE(back.sources[1].query.project);
  EXPECT_EQ((std::vector<std::string>{"zone-b", "zone-a"}), JobZones(RecordOf(j.dump())));
}

// A record written by an older podrun ("tpu_nodes", "migs") is read, and rewritten as "sources".
TEST(JobPodTest, AnOlderRecordsTpuNodesAndMigsAreReadAndRewrittenAsSources) {
  const std::string old = R"({"cloud_tpu": true, "tpu_nodes": [{"name": "node-1", "zone": "z1"}],
                              "migs": [{"name": "mig-1", "zone": "z2", "project": "p"}]})";
  std::filesystem::path root;
  const Pod pod = PodOfJob(RecordOf(old), &root);
  ASSERT_EQ(2u, pod.sources.size());
  EXPECT_EQ(PodSourceKind::kTpuNode, pod.sources[0].kind);
  EXPECT_EQ("node-1", pod.sources[0].query.name);
  EXPECT_EQ(PodSourceKind::kMig, pod.sources[1].kind);
  EXPECT_EQ("p", pod.sources[1].query.project.value_or(""));
  EXPECT_EQ((std::vector<std::string>{"z1", "z2"}), JobZones(RecordOf(old)));
  const nlohmann::json rewritten = nlohmann::json::parse(WithPodSlices(old, pod));
  EXPECT_FALSE(rewritten.contains("tpu_nodes")) << rewritten.dump();
  EXPECT_FALSE(rewritten.contains("migs")) << rewritten.dump();
  EXPECT_EQ(2u, rewritten["sources"].size()) << rewritten.dump();
}

// A source of a kind this podrun does not know is a usage error naming the job, not a guess.
TEST(JobPodTest, AnUnknownSourceKindIsAnErrorNamingTheJob) {
  std::filesystem::path root;
  try {
    PodOfJob(RecordOf(R"({"sources": [{"kind": "gke", "name": "n", "zone": "z"}]})"), &root);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, std::string(e.what()).find("20261128-000000-abcd")) << e.what();
    EXPECT_NE(std::string::npos, std::string(e.what()).find("'gke'")) << e.what();
  }
  EXPECT_TRUE(
      JobZones(RecordOf(R"({"sources": [{"kind": "gke", "name": "n", "zone": "z"}]})")).empty());
}

}  // namespace
}  // namespace podrun
