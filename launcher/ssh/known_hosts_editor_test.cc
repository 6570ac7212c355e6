// Tests of RemoveKnownHosts against what ssh-keygen itself writes and finds.
#include "launcher/ssh/known_hosts_editor.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

TEST_F(KnownHostsEditorTest, EntriesAreAppendedHashedWhenTheFileIsAndWithTheirComment) {
  const fs::path file = dir_ / "known_hosts";
  std::ofstream(file) << "10.0.0.1 " << kKey << "\n";
  const std::string key = std::string(kKey).substr(std::string("ssh-ed25519 ").size());
  EXPECT_EQ(1, ReplaceKnownHosts(file.string(), {"10.0.0.1"},
                                 {{"10.0.0.1", "ssh-ed25519", key, "a-comment"},
                                  {"[10.0.0.2]:2222", "ssh-ed25519", key, ""}}));
  EXPECT_EQ("10.0.0.1 " + std::string(kKey) + " a-comment\n[10.0.0.2]:2222 " + kKey + "\n",
            Read(file));
  ASSERT_EQ(0, RunProgram({"ssh-keygen", "-H", "-f", file.string()}).exit_code);
  ReplaceKnownHosts(file.string(), {"10.0.0.1"}, {{"10.0.0.1", "ssh-ed25519", key, "c"}});
  EXPECT_EQ(std::string::npos, Read(file).find("10.0.0.1")) << Read(file);
  EXPECT_EQ(0, RunProgram({"ssh-keygen", "-F", "10.0.0.1", "-f", file.string()}).exit_code);
  EXPECT_EQ(0, RunProgram({"ssh-keygen", "-F", "[10.0.0.2]:2222", "-f", file.string()}).exit_code);
  // A new file, in a new directory: 0600 in 0700.
  const fs::path fresh = dir_ / "new" / "known_hosts";
  ReplaceKnownHosts(fresh.string(), {}, {{"10.0.0.3", "ssh-ed25519", key, ""}});
  struct stat st {};
  ASSERT_EQ(0, ::stat(fresh.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  ASSERT_EQ(0, ::stat(fresh.parent_path().c_str(), &st));
  EXPECT_EQ(0700u, st.st_mode & 0777);
  AppendKnownHosts(fresh.string(), "10.0.0.4 " + std::string(kKey));
  EXPECT_EQ(0, RunProgram({"ssh-keygen", "-F", "10.0.0.4", "-f", fresh.string()}).exit_code);
  fs::create_symlink(fresh, dir_ / "link");
  EXPECT_THROW(AppendKnownHosts((dir_ / "link").string(), "10.0.0.5 " + std::string(kKey)), Error);
}

// Two processes editing one known_hosts at once (two keepers pinning their nodes, a launch
// recording a key on first use): each edit is locked and renamed from a scratch file of its own,
// so every line either writes is there at the end.
TEST_F(KnownHostsEditorTest, TwoProcessesEditingAtOnceLoseNothing) {
  const fs::path file = dir_ / "known_hosts";
  const std::string key = std::string(kKey).substr(std::string("ssh-ed25519 ").size());
  constexpr int kRounds = 150;
  auto edit = [&](const std::string& prefix) {
    for (int i = 0; i < kRounds; ++i) {
      const std::string name = prefix + std::to_string(i);
      if (i % 3 == 0) {
        AppendKnownHosts(file.string(), name + " " + kKey);
      } else {
        // As a keeper pinning a node: forget its old name, write the new one.
        ReplaceKnownHosts(file.string(), {name + "-old"}, {{name, "ssh-ed25519", key, "pin"}});
      }
    }
  };
  int go[2];
  ASSERT_EQ(0, ::pipe(go));
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    char c;
    ::close(go[1]);
    (void)!::read(go[0], &c, 1);  // both start together
    try {
      edit("10.1.");
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  ::close(go[0]);
  ::close(go[1]);  // the child's read returns: go
  edit("10.2.");
  int status = 0;
  ASSERT_EQ(child, ::waitpid(child, &status, 0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::string text = Read(file);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(2 * kRounds, lines);
  for (const char* prefix : {"10.1.", "10.2."}) {
    for (int i = 0; i < kRounds; ++i) {
      const std::string name = prefix + std::to_string(i) + " ";
      EXPECT_TRUE(text.starts_with(name) || text.find("\n" + name) != std::string::npos)
          << name << "lost";
    }
  }
  for (const auto& entry : fs::directory_iterator(dir_)) {
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(name == "known_hosts" || name == "known_hosts.podrun-lock") << name << " left";
  }
}

}  // namespace
}  // namespace podrun
