// Tests of the sync manifest on trees made in a temporary directory.
#include "launcher/sync/manifest.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "launcher/base/error.h"
#include "proto/agent.pb.h"
#include "proto/sha256.h"

namespace podrun {
namespace {

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("podrun-manifest-test-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override {
    std::filesystem::permissions(root_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    std::filesystem::remove_all(root_);
  }

  void Write(const std::string& relative, const std::string& content, mode_t mode = 0644) {
    std::filesystem::path path = root_ / relative;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << content;
    ASSERT_EQ(0, ::chmod(path.c_str(), mode));
  }
  void Symlink(const std::string& target, const std::string& relative) {
    std::filesystem::create_directories((root_ / relative).parent_path());
    std::filesystem::create_symlink(target, root_ / relative);
  }

  // The manifest's files by path.
  static std::map<std::string, ManifestFile> ByPath(const Manifest& manifest) {
    std::map<std::string, ManifestFile> files;
    for (const ManifestFile& file : manifest.files) files[file.path] = file;
    return files;
  }
  static std::vector<std::string> Paths(const Manifest& manifest) {
    std::vector<std::string> paths;
    for (const ManifestFile& file : manifest.files) paths.push_back(file.path);
    return paths;
  }

  std::filesystem::path root_;
};

TEST_F(ManifestTest, HashesSizesAndModes) {
  Write("a.txt", "hello\n");
  Write("bin/run.sh", "#!/bin/sh\necho hi\n", 0755);
  Write("empty", "", 0600);
  Manifest manifest = BuildManifest(root_);
  auto files = ByPath(manifest);
  ASSERT_EQ(3u, files.size());
  EXPECT_EQ(Sha256Hex("hello\n"), files["a.txt"].sha256);
  EXPECT_EQ(6u, files["a.txt"].size);
  EXPECT_EQ(0644u, files["a.txt"].mode);
  EXPECT_EQ("", files["a.txt"].symlink);
  EXPECT_EQ(Sha256Hex("#!/bin/sh\necho hi\n"), files["bin/run.sh"].sha256);
  EXPECT_EQ(0755u, files["bin/run.sh"].mode);
  EXPECT_EQ(Sha256Hex(""), files["empty"].sha256);
  EXPECT_EQ(0u, files["empty"].size);
  EXPECT_EQ(0600u, files["empty"].mode);
  EXPECT_EQ(6u + 18u, manifest.bytes);
}

TEST_F(ManifestTest, LargeFileHashedInChunks) {
  std::string content;
  for (size_t i = 0; content.size() < (size_t{3} << 20) + 17; ++i) {
    content += std::to_string(i * 2654435761u) + "\n";
  }
  Write("big.bin", content);
  Manifest manifest = BuildManifest(root_);
  ASSERT_EQ(1u, manifest.files.size());
  EXPECT_EQ(Sha256Hex(content), manifest.files[0].sha256);
  EXPECT_EQ(content.size(), manifest.files[0].size);
  EXPECT_EQ(content.size(), manifest.bytes);
}

TEST_F(ManifestTest, SymlinksKeptNotFollowed) {
  Write("a.txt", "abc");
  Write("dir/inside.txt", "x");
  Symlink("a.txt", "link");
  Symlink("dir", "dirlink");
  Symlink("../../outside/nowhere", "dir/dangling");
  Manifest manifest = BuildManifest(root_);
  EXPECT_EQ(
      (std::vector<std::string>{"a.txt", "dir/dangling", "dir/inside.txt", "dirlink", "link"}),
      Paths(manifest));
  auto files = ByPath(manifest);
  EXPECT_EQ("a.txt", files["link"].symlink);
  EXPECT_EQ(Sha256Hex("a.txt"), files["link"].sha256);
  EXPECT_EQ(5u, files["link"].size);
  EXPECT_EQ("dir", files["dirlink"].symlink);
  EXPECT_EQ("../../outside/nowhere", files["dir/dangling"].symlink);
  EXPECT_EQ(3u + 1u, manifest.bytes);  // symlinks do not count
}

TEST_F(ManifestTest, IgnoredFilesAndDirectoriesAbsent) {
  Write(".gitignore", "*.o\nbuild/\n/data\n");
  Write(".podrunignore", "!keep.o\n*.ckpt\n");
  Write("main.c", "int main;");
  Write("main.o", "obj");
  Write("keep.o", "kept");
  Write("build/out", "x");
  Write("data", "top-level data is anchored");
  Write("src/data", "kept: not at the top");
  Write("src/model.ckpt", "big");
  Write("src/.gitignore", "!*.ckpt\nlocal/\n");
  Write("src/w.ckpt", "wanted: the deeper rule wins");
  Write("src/local/x", "x");
  Write("src/lib.o", "obj");
  Manifest manifest = BuildManifest(root_);
  EXPECT_EQ(
      (std::vector<std::string>{".gitignore", ".podrunignore", "keep.o", "main.c", "src/.gitignore",
                                "src/data", "src/model.ckpt", "src/w.ckpt"}),
      Paths(manifest));
}

TEST_F(ManifestTest, GitAlwaysAbsent) {
  Write(".gitignore", "!.git\n");
  Write(".git/HEAD", "ref: refs/heads/main\n");
  Write(".git/objects/ab/cdef", "blob");
  Write("sub/.git", "gitdir: ../.git/modules/sub\n");
  Write("sub/file", "x");
  Manifest manifest = BuildManifest(root_);
  EXPECT_EQ((std::vector<std::string>{".gitignore", "sub/file"}), Paths(manifest));
}

TEST_F(ManifestTest, SpecialFilesAndEmptyDirectoriesSkipped) {
  Write("f", "x");
  std::filesystem::create_directories(root_ / "empty/deeper");
  ASSERT_EQ(0, ::mkfifo((root_ / "fifo").c_str(), 0644));
  Manifest manifest = BuildManifest(root_);
  EXPECT_EQ((std::vector<std::string>{"f"}), Paths(manifest));
}

TEST_F(ManifestTest, SortedByteOrderWithCleanPaths) {
  for (const char* path : {"a/b", "a-c", "a.b", "B", "\xc3\xa9", "z/y/x", "a0"}) Write(path, path);
  Manifest manifest = BuildManifest(root_ / ".");
  EXPECT_EQ((std::vector<std::string>{"B", "a-c", "a.b", "a/b", "a0", "z/y/x", "\xc3\xa9"}),
            Paths(manifest));
  for (const ManifestFile& file : manifest.files) {
    for (const auto& part : std::filesystem::path(file.path)) {
      EXPECT_NE(".", part.string());
      EXPECT_NE("..", part.string());
      EXPECT_NE("", part.string());
    }
  }
}

TEST_F(ManifestTest, MissingRootIsAUsageError) {
  const auto missing = root_ / "missing";
  try {
    BuildManifest(missing);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos) << e.what();
  }
  Write("file", "x");
  EXPECT_THROW(BuildManifest(root_ / "file"), Error);
}

TEST_F(ManifestTest, UnreadableFileIsAnErrorNamingIt) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads everything";
  Write("ok", "x");
  Write("secret", "x", 0000);
  try {
    BuildManifest(root_);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(ExitCode::kUsage, e.code());
    EXPECT_NE(std::string(e.what()).find((root_ / "secret").string()), std::string::npos)
        << e.what();
  }
}

TEST_F(ManifestTest, SerializeRoundTripsAndIsDeterministic) {
  Write("a.txt", "abc", 0640);
  Write("d/b.sh", "#!/bin/sh\n", 0755);
  Symlink("a.txt", "d/link");
  Manifest manifest = BuildManifest(root_);
  std::string bytes = SerializeManifest(manifest);
  EXPECT_EQ(bytes, SerializeManifest(manifest));
  EXPECT_EQ(bytes, SerializeManifest(BuildManifest(root_)));

  agent::v1::SyncManifest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(static_cast<int>(manifest.files.size()), parsed.entries_size());
  for (int i = 0; i < parsed.entries_size(); ++i) {
    const agent::v1::ManifestEntry& entry = parsed.entries(i);
    const ManifestFile& file = manifest.files[i];
    EXPECT_EQ(file.path, entry.path());
    EXPECT_EQ(file.size, entry.size());
    EXPECT_EQ(file.mode, entry.mode());
    EXPECT_EQ(file.sha256, entry.sha256());
    EXPECT_EQ(file.symlink, entry.symlink());
  }
  EXPECT_EQ("d/link", parsed.entries(2).path());
  EXPECT_EQ("a.txt", parsed.entries(2).symlink());
  EXPECT_EQ(0640u, parsed.entries(0).mode());
}

TEST_F(ManifestTest, BlobsDistinctInFirstSeenOrder) {
  Write("a", "same");
  Write("b", "other");
  Write("c", "same");
  Symlink("a", "d");
  Manifest manifest = BuildManifest(root_);
  EXPECT_EQ((std::vector<std::string>{Sha256Hex("same"), Sha256Hex("other")}),
            ManifestBlobs(manifest));
  EXPECT_TRUE(ManifestBlobs(Manifest{}).empty());
}

}  // namespace
}  // namespace podrun
