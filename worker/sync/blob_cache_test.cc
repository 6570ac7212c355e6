// Tests of the blob cache's pruning: the age cap, the size cap (least recently used first), blobs
// kept because they are named or were used recently, Use marking a blob used, and writers'
// leftovers removed once old while a live writer's file and unknown files stay.
#include "worker/sync/blob_cache.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace podrun::agent {
namespace {

namespace fs = std::filesystem;
using std::chrono::hours;
using std::chrono::minutes;

class BlobCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "blobcache.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    cache_.emplace(dir_ / "blobs");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Puts `content` into the cache, last used `age` before now_; returns its hash.
  std::string PutAged(const std::string& content, fs::file_time_type::duration age) {
    const std::string sha256 = cache_->Put(content);
    fs::last_write_time(cache_->PathOf(sha256), now_ - age);
    return sha256;
  }

  // A file in the cache's first shard with `name`, last written `age` before now_.
  fs::path Stray(const std::string& name, fs::file_time_type::duration age) {
    const fs::path path = dir_ / "blobs" / "ab" / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << "partial";
    fs::last_write_time(path, now_ - age);
    return path;
  }

  const fs::file_time_type now_ = fs::file_time_type::clock::now();
  fs::path dir_;
  std::optional<BlobCache> cache_;
};

TEST_F(BlobCacheTest, BlobsUnusedTooLongGo) {
  const std::string old = PutAged("old", hours(24 * 15));
  const std::string kept = PutAged("old but in use", hours(24 * 15));
  const std::string fresh = PutAged("fresh", hours(24 * 13));
  const BlobCachePruned pruned = cache_->Prune(BlobCacheLimits{}, {kept}, now_);
  EXPECT_EQ(pruned.blobs, 1u);
  EXPECT_EQ(pruned.bytes, 3u);
  EXPECT_FALSE(cache_->Has(old));
  EXPECT_TRUE(cache_->Has(kept));
  EXPECT_TRUE(cache_->Has(fresh));
  EXPECT_EQ(pruned.kept_bytes, 14u + 5u);
}

TEST_F(BlobCacheTest, TheSizeCapRemovesTheLeastRecentlyUsedFirst) {
  const std::string content(100, 'x');
  const std::string a = PutAged(content + "a", hours(4));
  const std::string b = PutAged(content + "b", hours(3));
  const std::string c = PutAged(content + "c", hours(2));
  const std::string d = PutAged(content + "d", minutes(10));  // recent: kept whatever the size
  BlobCacheLimits limits;
  limits.max_bytes = 250;
  BlobCachePruned pruned = cache_->Prune(limits, {}, now_);
  EXPECT_EQ(pruned.blobs, 2u);
  EXPECT_FALSE(cache_->Has(a));
  EXPECT_FALSE(cache_->Has(b));
  EXPECT_TRUE(cache_->Has(c));
  EXPECT_TRUE(cache_->Has(d));
  EXPECT_EQ(pruned.kept_bytes, 202u);

  limits.max_bytes = 0;
  pruned = cache_->Prune(limits, {c}, now_);  // named: kept
  EXPECT_EQ(pruned.blobs, 0u);
  pruned = cache_->Prune(limits, {}, now_);
  EXPECT_EQ(pruned.blobs, 1u);
  EXPECT_FALSE(cache_->Has(c));
  EXPECT_TRUE(cache_->Has(d));
}

TEST_F(BlobCacheTest, UseMarksABlobUsed) {
  const std::string used = PutAged("used", hours(24 * 20));
  const std::string unused = PutAged("unused", hours(24 * 20));
  EXPECT_TRUE(cache_->Use(used));
  EXPECT_FALSE(cache_->Use(std::string(64, 'e')));
  const BlobCachePruned pruned =
      cache_->Prune(BlobCacheLimits{}, {}, fs::file_time_type::clock::now());
  EXPECT_EQ(pruned.blobs, 1u);
  EXPECT_TRUE(cache_->Has(used));
  EXPECT_FALSE(cache_->Has(unused));
}

TEST_F(BlobCacheTest, CrashLeftoversGoOnceOld) {
  const std::string sha256(64, 'a');
  const fs::path crashed = Stray(sha256 + ".tmp.host.123.0", minutes(31));
  const fs::path recent = Stray(sha256 + ".tmp.host.124.0", minutes(5));
  const fs::path unknown = Stray("notes.txt", hours(24 * 100));
  BlobCache::Writer live(*cache_, std::string(64, 'b'));
  live.Append("in progress");
  const BlobCachePruned pruned = cache_->Prune(BlobCacheLimits{}, {}, now_);
  EXPECT_EQ(pruned.leftovers, 1u);
  EXPECT_EQ(pruned.blobs, 0u);
  EXPECT_FALSE(fs::exists(crashed));
  EXPECT_TRUE(fs::exists(recent));
  EXPECT_TRUE(fs::exists(unknown));
  size_t temp_files = 0;
  for (const auto& entry : fs::directory_iterator(dir_ / "blobs" / "bb")) {
    temp_files += entry.path().filename().string().find(".tmp.") != std::string::npos;
  }
  EXPECT_EQ(temp_files, 1u);  // the live writer's
}

}  // namespace
}  // namespace podrun::agent
