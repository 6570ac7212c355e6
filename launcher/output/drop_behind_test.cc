// Tests that the launcher's log copies leave the page cache behind their writer: pages written
// back are dropped once the next chunk is asked for, and a file written without it keeps them.
#include "launcher/output/drop_behind.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

constexpr uint64_t kTmpfsMagic = 0x01021994;

// How many of the pages of `fd`'s first `bytes` are in the page cache.
size_t ResidentPages(int fd, size_t bytes) {
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return SIZE_MAX;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  size_t resident = SIZE_MAX;
  if (::mincore(map, bytes, in_core.data()) == 0) {
    resident = 0;
    for (unsigned char c : in_core) resident += c & 1;
  }
  ::munmap(map, bytes);
  return resident;
}

// Writes 4 chunks of 1 MiB pieces to a new file at `path`, each piece synced (so that its pages
// are clean, as a slow writer's are by the time the next chunk comes) and followed by
// `drop->Wrote` unless `drop` is null.
UniqueFd WriteSynced(const std::filesystem::path& path, DropBehind* drop) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600));
  EXPECT_GE(fd.get(), 0);
  const std::string piece(1u << 20, 'x');
  for (uint64_t written = 0; written < 4 * DropBehind::kChunkBytes; written += piece.size()) {
    EXPECT_TRUE(WriteAll(fd.get(), piece));
    EXPECT_EQ(0, ::fdatasync(fd.get()));
    if (drop != nullptr) drop->Wrote(fd.get());
  }
  return fd;
}

TEST(DropBehindTest, WrittenChunksLeaveThePageCacheAndAFileWithoutItKeepsThem) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  struct statfs fs {};
  ASSERT_EQ(0, ::statfs(dir.c_str(), &fs));
  if (static_cast<uint64_t>(fs.f_type) == kTmpfsMagic) {
    GTEST_SKIP() << dir << " is a tmpfs: its pages are the file, there is no cache to drop";
  }
  const std::string stem = "podrun-drop-behind-test-" + std::to_string(::getpid());
  const std::filesystem::path kept = dir / (stem + "-kept");
  const std::filesystem::path dropped = dir / (stem + "-dropped");
  const size_t first = 2 * DropBehind::kChunkBytes;  // chunks two calls behind the end

  UniqueFd plain = WriteSynced(kept, nullptr);
  DropBehind drop;
  UniqueFd with = WriteSynced(dropped, &drop);
  const size_t pages = first / static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GT(ResidentPages(plain.get(), first), pages / 2);
  EXPECT_EQ(0u, ResidentPages(with.get(), first));
  std::filesystem::remove(kept);
  std::filesystem::remove(dropped);
}

TEST(DropBehindTest, AFileCutBackIsDroppedAgainFromItsHead) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("podrun-drop-behind-cut-" + std::to_string(::getpid()));
  DropBehind drop;
  UniqueFd fd = WriteSynced(path, &drop);
  // Resume cuts a copy back: what follows is written from there on and still dropped.
  ASSERT_EQ(0, ::ftruncate(fd.get(), 0));
  const std::string piece(1u << 20, 'y');
  for (uint64_t written = 0; written < 3 * DropBehind::kChunkBytes; written += piece.size()) {
    ASSERT_TRUE(WriteAll(fd.get(), piece));
    ASSERT_EQ(0, ::fdatasync(fd.get()));
    drop.Wrote(fd.get());
  }
  struct statfs fs {};
  ASSERT_EQ(0, ::fstatfs(fd.get(), &fs));
  if (static_cast<uint64_t>(fs.f_type) != kTmpfsMagic) {
    EXPECT_EQ(0u, ResidentPages(fd.get(), DropBehind::kChunkBytes));
  }
  EXPECT_EQ(3 * DropBehind::kChunkBytes, std::filesystem::file_size(path));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace podrun
