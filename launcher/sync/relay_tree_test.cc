#include "launcher/sync/relay_tree.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(RelayTree, OneWorkerIsTheRoot) {
  RelayTree t = MakeRelayTree(1, 4);
  EXPECT_EQ(std::vector<int>{-1}, t.parent);
  ASSERT_EQ(1u, t.levels.size());
  EXPECT_EQ(std::vector<int>{0}, t.levels[0]);
}

TEST(RelayTree, SixteenWorkersFanoutFourIsTwoLevelsDeep) {
  RelayTree t = MakeRelayTree(16, 4);
  ASSERT_EQ(3u, t.levels.size());
  EXPECT_EQ((std::vector<int>{1, 2, 3, 4}), t.levels[1]);
  EXPECT_EQ(11u, t.levels[2].size());
  for (int p = 1; p < 16; ++p) {
    EXPECT_LT(t.parent[p], p);  // a parent is complete before its children fetch
  }
  std::vector<int> children(16, 0);
  for (int p = 1; p < 16; ++p) ++children[t.parent[p]];
  for (int c : children) EXPECT_LE(c, 4);
}

TEST(RelayTree, DepthGrowsWithTheLogarithm) {
  EXPECT_EQ(5u, MakeRelayTree(200, 4).levels.size());
  EXPECT_EQ(200u, MakeRelayTree(200, 1).levels.size());  // a chain
}

}  // namespace
}  // namespace podrun
