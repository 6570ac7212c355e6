// Tests of exec --fold's grouping: identical outputs grouped by worker, both streams compared,
// silent workers left out, and a worker past the bound handed back whole and in order.
#include "launcher/output/output_groups.h"

#include <gtest/gtest.h>

namespace podrun {
namespace {

TEST(OutputGroupsTest, WorkersWithIdenticalOutputFormOneGroup) {
  OutputGroups groups;
  for (int w : {0, 1, 2, 4}) {
    groups.Add(w, Stream::kStdout, "jax 0.4.30\n");
    groups.Add(w, Stream::kStdout, "same\n");
  }
  groups.Add(3, Stream::kStdout, "jax 0.4.29\nsame\n");
  groups.Add(5, Stream::kStdout, "jax 0.4.30\nsame\n");
  groups.Add(5, Stream::kStderr, "warning\n");  // another stderr: another group
  groups.Add(6, Stream::kStdout, "");           // silent: no group
  const auto g = groups.Groups();
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].workers, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(g[0].out, "jax 0.4.30\nsame\n");
  EXPECT_EQ(g[1].workers, (std::vector<int>{3}));
  EXPECT_EQ(g[2].workers, (std::vector<int>{5}));
  EXPECT_EQ(g[2].err, "warning\n");
}

TEST(OutputGroupsTest, AWorkerPastTheBoundIsHandedBackInOrder) {
  OutputGroups groups(10);
  EXPECT_TRUE(groups.Add(1, Stream::kStdout, "abc"));
  EXPECT_TRUE(groups.Add(1, Stream::kStderr, "de"));
  EXPECT_FALSE(groups.Add(1, Stream::kStdout, "fghijk"));
  const auto chunks = groups.TakeOverflowed(1);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], (std::pair<Stream, std::string>{Stream::kStdout, "abc"}));
  EXPECT_EQ(chunks[1], (std::pair<Stream, std::string>{Stream::kStderr, "de"}));
  EXPECT_EQ(chunks[2], (std::pair<Stream, std::string>{Stream::kStdout, "fghijk"}));
  EXPECT_TRUE(groups.Groups().empty());
}

}  // namespace
}  // namespace podrun
