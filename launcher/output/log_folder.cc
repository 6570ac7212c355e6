// Folding identical lines of all workers.
#include "launcher/output/log_folder.h"

#include <algorithm>
#include <stdexcept>

namespace podrun {

LogFolder::LogFolder(std::vector<int> workers, Emit emit, size_t max_held_bytes)
    : workers_(std::move(workers)), emit_(std::move(emit)), max_held_bytes_(max_held_bytes) {
  std::sort(workers_.begin(), workers_.end());
  workers_.erase(std::unique(workers_.begin(), workers_.end()), workers_.end());
  if (max_held_bytes_ == 0)
    max_held_bytes_ = kHeldBytesPerWorker * std::max<size_t>(1, workers_.size());
  for (Pending& pending : pending_) {
    for (int w : workers_) pending[w];
  }
}

void LogFolder::AddLine(int worker, Stream stream, std::string_view text) {
  Pending& pending = pending_[static_cast<int>(stream)];
  auto it = pending.find(worker);
  if (it == pending.end()) {
    throw std::invalid_argument("LogFolder: w" + std::to_string(worker) + " is not selected");
  }
  if (ended_.count(worker)) {
    throw std::invalid_argument("LogFolder: w" + std::to_string(worker) + " has ended");
  }
  size_t& owed = owed_[static_cast<int>(stream)][worker];
  if (owed > 0) {  // the others' lines of this index were printed already
    --owed;
    emit_({worker}, stream, text);
    return;
  }
  it->second.emplace_back(text);
  held_bytes_[static_cast<int>(stream)] += Cost(text);
  Drain(stream);
  while (held_bytes_[static_cast<int>(stream)] > max_held_bytes_) ForceOldest(stream);
}

void LogFolder::ForceOldest(Stream stream) {
  int s = static_cast<int>(stream);
  Pending& pending = pending_[s];
  // Groups of workers with identical lines at the oldest index, in worker order of first use.
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int w : workers_) {
    std::deque<std::string>& lines = pending[w];
    if (lines.empty()) {
      if (!ended_.count(w)) ++owed_[s][w];
      continue;
    }
    held_bytes_[s] -= Cost(lines.front());
    auto group = std::find_if(groups.begin(), groups.end(),
                              [&](const auto& g) { return g.first == lines.front(); });
    if (group == groups.end()) {
      groups.emplace_back(std::move(lines.front()), std::vector<int>{w});
    } else {
      group->second.push_back(w);
    }
    lines.pop_front();
  }
  for (const auto& [text, ws] : groups) emit_(ws, stream, text);
}

void LogFolder::End(int worker) {
  if (!pending_[0].count(worker)) {
    throw std::invalid_argument("LogFolder: w" + std::to_string(worker) + " is not selected");
  }
  ended_.insert(worker);
  Drain(Stream::kStdout);
  Drain(Stream::kStderr);
}

size_t LogFolder::held_lines() const {
  size_t n = 0;
  for (const Pending& pending : pending_) {
    for (const auto& [worker, lines] : pending) n += lines.size();
  }
  return n;
}

void LogFolder::Drain(Stream stream) {
  Pending& pending = pending_[static_cast<int>(stream)];
  for (;;) {
    // The next line index is complete when every worker has a line there or has ended.
    bool any = false;
    bool all_present = true;
    for (int w : workers_) {
      if (!pending[w].empty()) {
        any = true;
      } else if (ended_.count(w)) {
        all_present = false;
      } else {
        return;  // w may still print this line
      }
    }
    if (!any) return;
    bool identical = all_present && std::all_of(workers_.begin(), workers_.end(), [&](int w) {
                       return pending[w].front() == pending[workers_.front()].front();
                     });
    if (identical) {
      emit_(workers_, stream, pending[workers_.front()].front());
    } else {
      for (int w : workers_) {
        if (!pending[w].empty()) emit_({w}, stream, pending[w].front());
      }
    }
    for (int w : workers_) {
      if (pending[w].empty()) continue;
      held_bytes_[static_cast<int>(stream)] -= Cost(pending[w].front());
      pending[w].pop_front();
    }
  }
}

}  // namespace podrun
