#include "launcher/pod/host_list.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "launcher/error.h"

namespace podrun {
namespace {

TEST(HostList, ParsesUserHostPort) {
  EXPECT_EQ((HostSpec{"matt", "10.0.0.2", 2222}), ParseHostSpec("matt@10.0.0.2:2222"));
  EXPECT_EQ((HostSpec{{}, "node-1", {}}), ParseHostSpec("node-1"));
  EXPECT_EQ((HostSpec{{}, "::1", 22}), ParseHostSpec("[::1]:22"));
  EXPECT_EQ((HostSpec{{}, "fe80::1", {}}), ParseHostSpec("fe80::1"));
  EXPECT_EQ("matt@h:22", ParseHostSpec(" matt@h:22 ").ToString());
}

TEST(HostList, RejectsBadEntries) {
  for (const char* bad : {"", "@host", "host:0", "host:70000", "host:x", "[::1", "a b"}) {
    try {
      ParseHostSpec(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code());
    }
  }
}

TEST(HostList, CommaListKeepsRankOrder) {
  auto hosts = ParseHostList("w2,root@w0:23,w1");
  ASSERT_EQ(3u, hosts.size());
  EXPECT_EQ("w2", hosts[0].host);
  EXPECT_EQ("root", hosts[1].user.value());
  EXPECT_EQ(23, hosts[1].port.value());
  EXPECT_EQ("w1", hosts[2].host);
}

TEST(HostList, FileIgnoresCommentsAndBlankLines) {
  std::string path = ::testing::TempDir() + "/hosts.txt";
  std::ofstream(path) << "# the pod\n\nw0  # first\n  root@w1:2200\n\n";
  auto hosts = ParseHostList("@" + path);
  ASSERT_EQ(2u, hosts.size());
  EXPECT_EQ("w0", hosts[0].host);
  EXPECT_EQ(2200, hosts[1].port.value());
  std::remove(path.c_str());
}

TEST(HostList, FileErrorsNameFileAndLine) {
  std::string path = ::testing::TempDir() + "/bad-hosts.txt";
  std::ofstream(path) << "w0\nw1:99999\n";
  try {
    ParseHostList("@" + path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find(path + ":2")) << e.what();
  }
  std::remove(path.c_str());
  EXPECT_THROW(ParseHostList("@/nonexistent/hosts"), Error);
  EXPECT_THROW(ParseHostList(",,"), Error);
}

}  // namespace
}  // namespace podrun
