// The tree blobs travel down during a sync (docs/design.md decision 11): the launcher sends to the
// root only, every other worker fetches from its parent over the pod's network, each worker
// serving at most `fanout` children, so the launcher's uplink carries one copy and the depth
// grows with the logarithm of the pod.
#pragma once

#include <cstddef>
#include <vector>

namespace podrun {

struct RelayTree {
  std::vector<int> parent;               // per position: its parent's position; -1 for the root
  std::vector<std::vector<int>> levels;  // positions by depth: levels[0] == {0}
};

// The tree over positions 0..n-1 (n >= 1), breadth first: the children of p are
// p*fanout+1 .. p*fanout+fanout. fanout >= 1.
RelayTree MakeRelayTree(size_t n, int fanout);

}  // namespace podrun
