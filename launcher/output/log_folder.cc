// Folding identical lines of all workers.
#include "launcher/output/log_folder.h"

#include <algorithm>
#include <stdexcept>

namespace podrun {

LogFolder::LogFolder(std::vector<int> workers, Emit emit)
    : workers_(std::move(workers)), emit_(std::move(emit)) {
  std::sort(workers_.begin(), workers_.end());
  workers_.erase(std::unique(workers_.begin(), workers_.end()), workers_.end());
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
  it->second.emplace_back(text);
  Drain(stream);
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
      if (!pending[w].empty()) pending[w].pop_front();
    }
  }
}

}  // namespace podrun
