// Tests of ReplaceFileAtomically: whole replacement, no scratch file left, no link followed.
#include "proto/atomic_write.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

namespace podrun {
namespace {

class AtomicWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "atomic.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static std::string Read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  int Entries() const {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) n += !e.path().empty();
    return n;
  }

  std::filesystem::path dir_;
};

TEST_F(AtomicWriteTest, ReplacesTheWholeFileWithItsModeAndLeavesNoScratchFile) {
  const std::filesystem::path path = dir_ / "f";
  std::ofstream(path) << "old content that is longer";
  ReplaceFileAtomically(path, "new", 0600, /*durable=*/true);
  EXPECT_EQ("new", Read(path));
  struct stat st {};
  ASSERT_EQ(0, ::stat(path.c_str(), &st));
  EXPECT_EQ(0600u, st.st_mode & 0777);
  EXPECT_EQ(1, Entries());
}

TEST_F(AtomicWriteTest, ALinkWhereTheFileGoesIsReplacedNotWrittenThrough) {
  const std::filesystem::path theirs = dir_ / "theirs";
  std::ofstream(theirs) << "theirs";
  const std::filesystem::path path = dir_ / "f";
  std::filesystem::create_symlink(theirs, path);
  ReplaceFileAtomically(path, "mine", 0644, /*durable=*/false);
  EXPECT_FALSE(std::filesystem::is_symlink(path));
  EXPECT_EQ("mine", Read(path));
  EXPECT_EQ("theirs", Read(theirs));
}

TEST_F(AtomicWriteTest, AFailureNamesTheFileAndLeavesNothing) {
  // The target is a directory: the rename fails after the scratch file was written.
  const std::filesystem::path path = dir_ / "d";
  std::filesystem::create_directory(path);
  std::filesystem::create_directory(path / "x");  // not empty: rename(2) refuses
  try {
    ReplaceFileAtomically(path, "data", 0644, /*durable=*/false);
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find(path.string())) << e.what();
  }
  EXPECT_EQ(1, Entries());  // the directory alone: the scratch file is gone
  EXPECT_THROW(ReplaceFileAtomically(dir_ / "no-such-dir" / "f", "x", 0644, false),
               std::system_error);
}

}  // namespace
}  // namespace podrun
