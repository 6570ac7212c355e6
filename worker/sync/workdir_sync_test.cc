#include "worker/sync/workdir_sync.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class WorkdirSyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A directory per process: ctest runs this suite's tests side by side.
    root_ = fs::path(::testing::TempDir()) / ("workdir-sync-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "work");
    cache_.emplace(root_ / "blobs");
  }
  void TearDown() override {
    cache_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  v1::ManifestEntry* Add(v1::SyncManifest& m, const std::string& path, const std::string& content,
                         uint32_t mode = 0644) {
    v1::ManifestEntry* e = m.add_entries();
    e->set_path(path);
    e->set_size(content.size());
    e->set_mode(mode);
    e->set_sha256(cache_->Put(content));
    return e;
  }
  SyncApplied Apply(const v1::SyncManifest& m) {
    return ApplyManifest(*cache_, m, root_ / "work", root_ / "state");
  }

  fs::path root_;
  std::optional<BlobCache> cache_;
};

TEST_F(WorkdirSyncTest, WritesTheTreeThenLeavesUnchangedFilesAlone) {
  v1::SyncManifest m;
  Add(m, "a.py", "print(1)\n");
  Add(m, "bin/run.sh", "#!/bin/sh\n", 0755);
  Add(m, "deep/er/empty", "");
  SyncApplied first = Apply(m);
  EXPECT_EQ(3u, first.written);
  EXPECT_EQ("print(1)\n", ReadFile(root_ / "work/a.py"));
  EXPECT_EQ("", ReadFile(root_ / "work/deep/er/empty"));
  struct stat st {};
  ASSERT_EQ(0, ::stat((root_ / "work/bin/run.sh").c_str(), &st));
  EXPECT_EQ(0755u, st.st_mode & 07777);
  SyncApplied second = Apply(m);
  EXPECT_EQ(0u, second.written);
  EXPECT_EQ(3u, second.unchanged);
}

TEST_F(WorkdirSyncTest, AFileChangedOnTheWorkerIsWrittenAgain) {
  v1::SyncManifest m;
  Add(m, "a.py", "print(1)\n");
  Apply(m);
  std::ofstream(root_ / "work/a.py") << "edited on the worker, longer\n";
  SyncApplied again = Apply(m);
  EXPECT_EQ(1u, again.written);
  EXPECT_EQ("print(1)\n", ReadFile(root_ / "work/a.py"));
}

TEST_F(WorkdirSyncTest, DeletesWhatLeftTheTreeAndKeepsWhatTheJobWrote) {
  v1::SyncManifest m;
  Add(m, "keep.py", "k\n");
  Add(m, "gone/old.py", "o\n");
  Apply(m);
  std::ofstream(root_ / "work/checkpoint.pt") << "job output\n";
  std::ofstream(root_ / "work/gone/job.txt") << "job output\n";
  v1::SyncManifest next;
  Add(next, "keep.py", "k\n");
  Add(next, "new.py", "n\n");
  SyncApplied applied = Apply(next);
  EXPECT_EQ(1u, applied.deleted);
  EXPECT_EQ(1u, applied.written);
  EXPECT_EQ(1u, applied.unchanged);
  EXPECT_FALSE(fs::exists(root_ / "work/gone/old.py"));
  EXPECT_TRUE(fs::exists(root_ / "work/gone/job.txt"));  // so its directory stays too
  EXPECT_TRUE(fs::exists(root_ / "work/checkpoint.pt"));
}

TEST_F(WorkdirSyncTest, ADirectoryMayBecomeAFile) {
  v1::SyncManifest m;
  Add(m, "x/inner.py", "i\n");
  Apply(m);
  v1::SyncManifest next;
  Add(next, "x", "now a file\n");
  Apply(next);
  EXPECT_EQ("now a file\n", ReadFile(root_ / "work/x"));
}

TEST_F(WorkdirSyncTest, SymlinksAreLinks) {
  v1::SyncManifest m;
  Add(m, "a.py", "a\n");
  v1::ManifestEntry* link = m.add_entries();
  link->set_path("b.py");
  link->set_symlink("a.py");
  link->set_sha256(cache_->Put("a.py"));
  Apply(m);
  EXPECT_EQ("a.py", fs::read_symlink(root_ / "work/b.py").string());
  EXPECT_EQ(0u, Apply(m).written);
}

TEST_F(WorkdirSyncTest, ACorruptBlobIsRefusedAndLeftOutOfTheCache) {
  v1::SyncManifest m;
  const std::string sha = Add(m, "a.py", "the real content\n")->sha256();
  std::ofstream(cache_->PathOf(sha), std::ios::binary | std::ios::trunc) << "tampered content\n";
  EXPECT_THROW(Apply(m), AgentError);
  EXPECT_FALSE(cache_->Has(sha));
  EXPECT_FALSE(fs::exists(root_ / "work/a.py"));
}

TEST_F(WorkdirSyncTest, PathsLeavingTheWorkdirAreRefused) {
  for (const char* bad : {"../x", "/etc/passwd", "a/../../x", "a//b", "./a", ""}) {
    EXPECT_FALSE(IsSafeManifestPath(bad)) << bad;
    v1::SyncManifest m;
    Add(m, bad, "x");
    EXPECT_THROW(Apply(m), AgentError) << bad;
  }
  EXPECT_TRUE(IsSafeManifestPath("a/b.c/..d"));
}

TEST_F(WorkdirSyncTest, BlobWriterChecksTheHash) {
  BlobCache::Writer writer(*cache_, std::string(64, 'a'));
  writer.Append("not matching");
  EXPECT_THROW(writer.Commit(), AgentError);
  EXPECT_FALSE(cache_->Has(std::string(64, 'a')));
  EXPECT_THROW(cache_->PathOf("../../etc/passwd"), AgentError);
}

TEST_F(WorkdirSyncTest, NoSymlinkOnTheWorkerIsFollowedInTheMiddleOfAPath) {
  // Someone put a link where the tree has a directory: nothing is written or deleted through it.
  fs::create_directories(root_ / "elsewhere");
  std::ofstream(root_ / "elsewhere/old.py") << "not the sync's\n";
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "work/pkg");
  v1::SyncManifest m;
  Add(m, "pkg/new.py", "n\n");
  EXPECT_THROW(Apply(m), AgentError);
  EXPECT_FALSE(fs::exists(root_ / "elsewhere/new.py"));

  // A file the previous sync wrote is not deleted through a link that replaced its directory.
  fs::remove(root_ / "work/pkg");
  v1::SyncManifest first;
  Add(first, "pkg/old.py", "o\n");
  Apply(first);
  fs::remove_all(root_ / "work/pkg");
  fs::create_directory_symlink(root_ / "elsewhere", root_ / "work/pkg");
  Apply(v1::SyncManifest());
  EXPECT_EQ("not the sync's\n", ReadFile(root_ / "elsewhere/old.py"));
}

TEST_F(WorkdirSyncTest, AManifestWithAPathBeneathItsOwnSymlinkIsRefused) {
  fs::create_directories(root_ / "elsewhere");
  v1::SyncManifest m;
  v1::ManifestEntry* link = m.add_entries();
  link->set_path("dir");
  link->set_symlink((root_ / "elsewhere").string());
  Add(m, "dir/planted.sh", "#!/bin/sh\n", 0755);
  EXPECT_THROW(Apply(m), AgentError);
  EXPECT_FALSE(fs::exists(root_ / "elsewhere/planted.sh"));
  EXPECT_FALSE(fs::exists(root_ / "work/dir"));  // refused before anything was written
}

TEST_F(WorkdirSyncTest, SyncedFilesLoseSetuidSetgidAndWorldWrite) {
  v1::SyncManifest m;
  Add(m, "suid", "x\n", 06755);
  Add(m, "open", "x\n", 0666);
  Add(m, "sticky", "x\n", 01775);
  Apply(m);
  struct stat st {};
  ASSERT_EQ(0, ::stat((root_ / "work/suid").c_str(), &st));
  EXPECT_EQ(0755u, st.st_mode & 07777);
  ASSERT_EQ(0, ::stat((root_ / "work/open").c_str(), &st));
  EXPECT_EQ(0664u, st.st_mode & 07777);
  ASSERT_EQ(0, ::stat((root_ / "work/sticky").c_str(), &st));
  EXPECT_EQ(0775u, st.st_mode & 07777);
}

}  // namespace
}  // namespace podrun::agent
