// The names podrun gives gcloud: what the API allows passes, nothing else does.
#include "launcher/pod/tpu_names.h"

#include <gtest/gtest.h>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_gcloud.h"

namespace podrun {
namespace {

TEST(TpuNames, NodeNamesTheApiAllowsPass) {
  for (const char* name : {"a", "node-1", "v5p-128-slice-0", "x2"}) {
    EXPECT_EQ("", TpuNodeNameProblem(name)) << name;
  }
  EXPECT_EQ("", TpuNodeNameProblem("n" + std::string(62, 'a')));  // 63
}

TEST(TpuNames, OtherNodeNamesAreRefused) {
  for (const char* name : {"", "-x", "--zone=-x", "../x", "a/b", "Node-1", "node_1", "node-",
                           "1node", "node 1", "node.1", "n\n"}) {
    EXPECT_NE("", TpuNodeNameProblem(name)) << name;
  }
  EXPECT_NE("", TpuNodeNameProblem("n" + std::string(63, 'a')));  // 64
  EXPECT_EQ(
      "'/' is not allowed: it must be 1 to 63 lowercase letters, digits and hyphens, starting "
      "with a letter and not ending with a hyphen (e.g. node-1)",
      TpuNodeNameProblem("a/b"));
}

TEST(TpuNames, Zones) {
  for (const char* zone : {"us-central1-a", "europe-west4-b", "z", "zone-1"}) {
    EXPECT_EQ("", ZoneNameProblem(zone)) << zone;
  }
  for (const char* zone : {"", "-x", "--zone=-x", "US-CENTRAL1-A", "us-central1-a/../b", "a/b",
                           "../x", "us central", "1-a", "us-"}) {
    EXPECT_NE("", ZoneNameProblem(zone)) << zone;
  }
}

TEST(TpuNames, Projects) {
  for (const char* project : {"my-project", "proj-1", "a12345", "example.com:my-project",
                              "abcdefghijklmnopqrstuvwxyz0123"}) {
    EXPECT_EQ("", ProjectIdProblem(project)) << project;
  }
  for (const char* project :
       {"", "p", "proj", "-myproject", "--project", "My-Project", "my_project", "my-project-",
        "1project", "../project", "a/b/project", "abcdefghijklmnopqrstuvwxyz01234", ":my-project",
        "-evil.com:my-project", "Example.com:my-project", "a..b:my-project"}) {
    EXPECT_NE("", ProjectIdProblem(project)) << project;
  }
}

TEST(TpuNames, OptionsNameTheOptionAndTheValue) {
  EXPECT_EQ("", TpuOptionsProblem("node-a,node-b", "us-central2-b", "my-project"));
  EXPECT_EQ("", TpuOptionsProblem(std::nullopt, std::nullopt, std::nullopt));
  EXPECT_EQ(0u, TpuOptionsProblem("node-a,A", "z", std::nullopt).rfind("--tpu 'A': ", 0));
  EXPECT_EQ(0u, TpuOptionsProblem("node-a", "-x", std::nullopt).rfind("--zone '-x': ", 0));
  EXPECT_EQ(0u, TpuOptionsProblem("node-a", "z", "x").rfind("--project 'x': ", 0));
}

TEST(TpuNames, NoBadNameReachesAGcloudCommandLine) {
  auto refused = [](const SliceRef& query) {
    try {
      GcloudDeleteNodeCommand(query);
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code());
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ("", refused({"node-1", "us-central1-a", std::string("my-project")}));
  EXPECT_EQ(0u, refused({"node-1", "--zone=-x", std::nullopt}).rfind("zone '--zone=-x': ", 0));
  EXPECT_EQ(0u, refused({"../x", "z", std::nullopt}).rfind("tpu name '../x': ", 0));
  EXPECT_EQ(0u, refused({"n", "z", std::string("-p")}).rfind("project '-p': ", 0));
  EXPECT_THROW(GcloudDescribeCommand({"a/b", "z", std::nullopt}), Error);
  EXPECT_THROW(DescribeTpuNode({"../../x", "z", std::nullopt}, "/nonexistent", false), Error);
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

TEST(TpuNamesTest, AListSplitsInOrderKeepingEmptyNamesForTheChecks) {
  EXPECT_EQ((std::vector<std::string>{"a"}), SplitTpuNames("a"));
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), SplitTpuNames("a,b"));
  EXPECT_EQ((std::vector<std::string>{"a", "", "b"}), SplitTpuNames("a,,b"));
  EXPECT_EQ((std::vector<std::string>{"a", ""}), SplitTpuNames("a,"));
  EXPECT_NE("", TpuOptionsProblem(std::string("a,"), std::nullopt, std::nullopt));
}

}  // namespace
}  // namespace podrun
