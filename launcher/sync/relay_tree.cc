// See relay_tree.h.
#include "launcher/sync/relay_tree.h"

namespace podrun {

RelayTree MakeRelayTree(size_t n, int fanout) {
  RelayTree tree;
  tree.parent.assign(n, -1);
  std::vector<int> depth(n, 0);
  for (size_t p = 1; p < n; ++p) {
    const int parent = static_cast<int>((p - 1) / static_cast<size_t>(fanout));
    tree.parent[p] = parent;
    depth[p] = depth[static_cast<size_t>(parent)] + 1;
  }
  for (size_t p = 0; p < n; ++p) {
    if (static_cast<size_t>(depth[p]) >= tree.levels.size()) tree.levels.resize(depth[p] + 1);
    tree.levels[static_cast<size_t>(depth[p])].push_back(static_cast<int>(p));
  }
  return tree;
}

}  // namespace podrun
