// Tests of RemoveKnownHosts against what ssh-keygen itself writes and finds.
#include "launcher/ssh/known_hosts_editor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "launcher/base/error.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class KnownHostsEditorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("known-hosts-editor-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

constexpr const char* kKey =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

TEST_F(KnownHostsEditorTest, RemovesPlainAndHashedNamesOfTheGivenHostsOnly) {
  const fs::path plain = dir_ / "known_hosts";
  std::ofstream(plain) << "# a comment\n"
                       << "10.0.0.1 " << kKey << "\n"
                       << "10.0.0.2,w2 " << kKey << "\n"
                       << "[10.0.0.3]:2222 " << kKey << "\n"
                       << "10.0.0.4 " << kKey << "\n"
                       << "@cert-authority *.example.com " << kKey << "\n";
  // A hashed copy, made by ssh-keygen itself.
  const fs::path hashed = dir_ / "hashed";
  fs::copy_file(plain, hashed);
  ASSERT_EQ(0, RunProgram({"ssh-keygen", "-H", "-f", hashed.string()}).exit_code);
  for (const fs::path& file : {plain, hashed}) {
    EXPECT_EQ(3, RemoveKnownHosts(file.string(), {"10.0.0.1", "w2", "[10.0.0.3]:2222"}));
    for (const char* gone : {"10.0.0.1", "w2"}) {
      EXPECT_NE(0, RunProgram({"ssh-keygen", "-F", gone, "-f", file.string()}).exit_code)
          << gone << " in " << Read(file);
    }
    EXPECT_NE(0,
              RunProgram({"ssh-keygen", "-F", "[10.0.0.3]:2222", "-f", file.string()}).exit_code);
    EXPECT_EQ(0, RunProgram({"ssh-keygen", "-F", "10.0.0.4", "-f", file.string()}).exit_code)
        << Read(file);
    EXPECT_NE(std::string::npos, Read(file).find("@cert-authority"));
    struct stat st {};
    ASSERT_EQ(0, ::stat(file.c_str(), &st));
    EXPECT_EQ(0600u, st.st_mode & 0777);
  }
  EXPECT_NE(std::string::npos, Read(plain).find("# a comment"));
  EXPECT_EQ(0, RemoveKnownHosts(plain.string(), {"10.9.9.9"}));
  EXPECT_EQ(0, RemoveKnownHosts((dir_ / "missing").string(), {"10.0.0.4"}));
}

TEST_F(KnownHostsEditorTest, ASymbolicLinkIsNeverRewritten) {
  const fs::path target = dir_ / "target";
  std::ofstream(target) << "10.0.0.1 " << kKey << "\n";
  fs::create_symlink(target, dir_ / "link");
  EXPECT_THROW(RemoveKnownHosts((dir_ / "link").string(), {"10.0.0.1"}), Error);
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_NE(std::string::npos, Read(target).find("10.0.0.1"));
}

}  // namespace
}  // namespace podrun
