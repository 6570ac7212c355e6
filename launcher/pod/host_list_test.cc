#include "launcher/pod/host_list.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <vector>

#include "launcher/base/error.h"

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
  for (const char* bad : {"", "@host", "host:0", "host:70000", "host:x", "[::1", "a b", "host:",
                          "host:-1", "host:+22", "host:22x", "[::1]:0", "[::1]x", "[::1]:65536"}) {
    try {
      ParseHostSpec(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(ExitCode::kUsage, e.code());
    }
  }
}

// The message of ParseHostSpec's error for `text` ("" if it was accepted).
std::string ErrorOf(const std::string& text) {
  try {
    ParseHostSpec(text);
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code()) << text;
    return e.what();
  }
  return "";
}

TEST(HostList, RejectsHostsThatCouldBeOptionsOrShellWords) {
  for (std::string bad : std::vector<std::string>{"-oProxyCommand=sh",
                                                  "w0;reboot",
                                                  "w0|x",
                                                  "w0&x",
                                                  "$(id)",
                                                  "`id`",
                                                  "w0'",
                                                  "w0\"",
                                                  "w0\\x",
                                                  "w0>x",
                                                  "w0<x",
                                                  "w0*",
                                                  "w0?",
                                                  "w0!",
                                                  "w0{a,b}",
                                                  "w0\tx",
                                                  "w0\nx",
                                                  std::string("w0\x01"),
                                                  "w0\x7f",
                                                  "w\xc3\xa9",
                                                  "w0/x",
                                                  "w0=x",
                                                  "w0~",
                                                  "w0#x",
                                                  "fe80::1;x",
                                                  "fe80::g",
                                                  "fe80::1%eth0;x"}) {
    std::string error = ErrorOf(bad);
    EXPECT_NE("", error) << "accepted host '" << bad << "'";
    EXPECT_NE(std::string::npos, error.find("host")) << error;
  }
}

TEST(HostList, RejectsUsersThatCouldBeOptionsOrShellWords) {
  for (std::string bad :
       std::vector<std::string>{"-l@w0", "a b@w0", "a;b@w0", "$USER@w0", "`id`@w0", "a'b@w0",
                                "a@b@w0", "a\x01@w0", "a|b@w0", "a/b@w0"}) {
    std::string error = ErrorOf(bad);
    EXPECT_NE("", error) << "accepted '" << bad << "'";
    EXPECT_NE(std::string::npos, error.find("user")) << error;
  }
  EXPECT_NE(std::string::npos, ErrorOf("a;b@w0").find("';'")) << ErrorOf("a;b@w0");
  EXPECT_NE(std::string::npos, ErrorOf("a\x01"
                                       "b@w0")
                                   .find("0x01"))
      << ErrorOf(
             "a\x01"
             "b@w0");
  EXPECT_NE(std::string::npos, ErrorOf("-x@w0").find("must not start with '-'"));
  EXPECT_NE("", ErrorOf(std::string(300, 'a')));
}

TEST(HostList, AcceptsOrdinaryNamesAndAddresses) {
  for (const char* good : {"w0", "node-1.c.project.internal", "my_host", "10.0.0.2", "::1",
                           "fe80::1%eth0", "[2001:db8::7]:2222", "ubuntu@t1v-n-abc-w-0",
                           "first.last@h", "root_2@h:22", "::ffff:10.0.0.1"}) {
    EXPECT_EQ("", ErrorOf(good)) << good;
  }
  EXPECT_EQ((HostSpec{{}, "2001:db8::7", 2222}), ParseHostSpec("[2001:db8::7]:2222"));
  EXPECT_EQ("[2001:db8::7]:2222", ParseHostSpec("[2001:db8::7]:2222").ToString());
}

TEST(HostList, ToStringReadsBackAsTheSameHost) {
  // Found by fuzz/host_list: "[a:1]" (host "a:1", no port) came back as host "a", port 1.
  for (const char* text : {"[a:1]", "u@[a:1]", "::1", "[::1]:22", "h", "h:22", "u@h"}) {
    const HostSpec spec = ParseHostSpec(text);
    EXPECT_EQ(spec, ParseHostSpec(spec.ToString())) << text << " -> " << spec.ToString();
  }
}

TEST(HostList, ValidateUserForTheDefaultUser) {
  EXPECT_NO_THROW(ValidateUser("matt", "--user matt"));
  EXPECT_THROW(ValidateUser("-oX", "--user -oX"), Error);
  EXPECT_THROW(ValidateUser("", "--user "), Error);
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

TEST(HostList, FileErrorsNameTheLineAndTheEntry) {
  std::string path = ::testing::TempDir() + "/evil-hosts.txt";
  std::ofstream(path) << "w0\n# fine\n\nroot@w1;touch x\n";
  try {
    ParseHostList("@" + path);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string::npos, m.find(path + ":4")) << m;
    EXPECT_NE(std::string::npos, m.find("w1;touch x")) << m;
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace podrun
