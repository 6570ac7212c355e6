// exec --fold's grouping of identical outputs (see output_groups.h).
#include "launcher/output/output_groups.h"

namespace podrun {

bool OutputGroups::Add(int worker, Stream stream, std::string_view data) {
  Kept& k = kept_[worker];
  (stream == Stream::kStdout ? k.out : k.err).append(data);
  k.order.emplace_back(stream, data.size());
  return k.out.size() + k.err.size() <= max_bytes_;
}

std::vector<std::pair<Stream, std::string>> OutputGroups::TakeOverflowed(int worker) {
  std::vector<std::pair<Stream, std::string>> chunks;
  auto it = kept_.find(worker);
  if (it == kept_.end()) return chunks;
  size_t out_at = 0, err_at = 0;
  for (const auto& [stream, bytes] : it->second.order) {
    if (stream == Stream::kStdout) {
      chunks.emplace_back(stream, it->second.out.substr(out_at, bytes));
      out_at += bytes;
    } else {
      chunks.emplace_back(stream, it->second.err.substr(err_at, bytes));
      err_at += bytes;
    }
  }
  kept_.erase(it);
  return chunks;
}

std::vector<OutputGroups::Group> OutputGroups::Groups() const {
  std::vector<Group> groups;
  std::map<std::pair<std::string_view, std::string_view>, size_t> index;
  for (const auto& [worker, k] : kept_) {  // in worker order: groups by their first worker
    if (k.out.empty() && k.err.empty()) continue;
    auto [it, added] = index.try_emplace({k.out, k.err}, groups.size());
    if (added) groups.push_back({{}, k.out, k.err});
    groups[it->second].workers.push_back(worker);
  }
  return groups;
}

}  // namespace podrun
