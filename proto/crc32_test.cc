#include "proto/crc32.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace podrun {
namespace {

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

TEST(Crc32Test, KnownValue) {
  // The standard check value of CRC-32/ISO-HDLC.
  EXPECT_EQ(Crc32(0, "123456789", 9), 0xCBF43926u);
  EXPECT_EQ(Crc32(0, "", 0), 0u);
}

TEST(Crc32Test, MatchesZlibForEveryLengthAndAlignment) {
  const std::string bytes = RandomBytes(600, 1);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t size = 0; size + offset <= bytes.size(); ++size) {
      ASSERT_EQ(Crc32(0, bytes.data() + offset, size),
                Crc32Portable(0, bytes.data() + offset, size))
          << "offset " << offset << " size " << size;
    }
  }
}

TEST(Crc32Test, MatchesZlibOnLargeInputsAndContinuations) {
  const std::string bytes = RandomBytes(3 << 20, 2);
  EXPECT_EQ(Crc32(0, bytes.data(), bytes.size()), Crc32Portable(0, bytes.data(), bytes.size()));
  // Continuing from an earlier value, at an odd split.
  const size_t split = 100003;
  const uint32_t first = Crc32(0, bytes.data(), split);
  EXPECT_EQ(Crc32(first, bytes.data() + split, bytes.size() - split),
            Crc32Portable(0, bytes.data(), bytes.size()));
  EXPECT_EQ(Crc32(0x12345678, bytes.data(), 4096), Crc32Portable(0x12345678, bytes.data(), 4096));
}

TEST(Crc32Test, AllZeroAndAllOneBytes) {
  for (char fill : {'\0', '\xff'}) {
    const std::string bytes(1000, fill);
    EXPECT_EQ(Crc32(0, bytes.data(), bytes.size()), Crc32Portable(0, bytes.data(), bytes.size()));
  }
}

}  // namespace
}  // namespace podrun
