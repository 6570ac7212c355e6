// Worker index lists: `-w 0,2-3` and their compact form `0-3,5` for folded output.
#pragma once

#include <string>
#include <vector>

namespace podrun {

// Parses "0,2-3" into sorted, unique indexes; every index must be < `num_workers`.
// Throws Error(kUsage) naming the bad part.
std::vector<int> ParseWorkerRange(const std::string& text, int num_workers);

// Formats sorted indexes compactly: {0,1,2,3,5} -> "0-3,5".
std::string FormatWorkerRange(const std::vector<int>& indexes);

}  // namespace podrun
