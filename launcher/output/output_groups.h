// OutputGroups: the gathering behind `podrun exec --fold` (ClusterShell's `clush -b`): each
// worker's whole output is kept, and workers whose output is identical are printed once, as one
// group labelled with their ranges (`[w0-2,4] text`). Bounded: a worker whose output passes
// max_bytes is given back to the caller to print unfolded (nothing is dropped).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/stream.h"

namespace podrun {

class OutputGroups {
 public:
  static constexpr size_t kMaxBytesPerWorker = 1 << 20;

  explicit OutputGroups(size_t max_bytes = kMaxBytesPerWorker) : max_bytes_(max_bytes) {}

  // Keeps `data` of `worker`. False when the worker's output has passed the bound: then the
  // caller prints TakeOverflowed(worker) and everything after it unfolded.
  bool Add(int worker, Stream stream, std::string_view data);
  // The output kept for an overflowed worker, in arrival order, and the worker forgotten.
  std::vector<std::pair<Stream, std::string>> TakeOverflowed(int worker);

  struct Group {
    std::vector<int> workers;  // sorted
    std::string out, err;
  };
  // Workers with identical output (both streams), ordered by their first worker. Workers that
  // printed nothing are not in any group.
  std::vector<Group> Groups() const;

 private:
  struct Kept {
    std::string out, err;
    std::vector<std::pair<Stream, size_t>> order;  // (stream, bytes) chunks, for TakeOverflowed
  };
  size_t max_bytes_;
  std::map<int, Kept> kept_;
};

}  // namespace podrun
