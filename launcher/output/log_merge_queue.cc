// Bounded time-ordered merge of workers' logs.
#include "launcher/output/log_merge_queue.h"

#include <queue>
#include <tuple>

namespace podrun {

LogMergeQueue::LogMergeQueue(const std::vector<int>& workers, std::map<int, int64_t> clock_offsets)
    : clock_offsets_(std::move(clock_offsets)) {
  for (int w : workers) sources_[w];
}

int64_t LogMergeQueue::LauncherTime(int worker, const LogRecord& record) const {
  auto it = clock_offsets_.find(worker);
  return record.time_ns - (it == clock_offsets_.end() ? 0 : it->second);
}

bool LogMergeQueue::Push(int worker, std::vector<LogRecord> batch) {
  std::unique_lock lock(mutex_);
  Source& source = sources_.at(worker);
  changed_.wait(lock, [&] { return cancelled_ || source.queued.size() < kMaxQueuedBatches; });
  if (cancelled_) return false;
  if (!batch.empty()) source.queued.push_back(std::move(batch));
  changed_.notify_all();
  return true;
}

void LogMergeQueue::End(int worker) {
  std::lock_guard lock(mutex_);
  sources_.at(worker).ended = true;
  changed_.notify_all();
}

void LogMergeQueue::Cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  changed_.notify_all();
}

bool LogMergeQueue::Cancelled() {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

bool LogMergeQueue::Next(int worker, std::vector<LogRecord>& current) {
  std::unique_lock lock(mutex_);
  Source& source = sources_.at(worker);
  changed_.wait(lock, [&] { return cancelled_ || source.ended || !source.queued.empty(); });
  if (cancelled_ || source.queued.empty()) return false;
  current = std::move(source.queued.front());
  source.queued.pop_front();
  changed_.notify_all();
  return true;
}

void LogMergeQueue::Drain(const std::function<void(int, const LogRecord&)>& on_record,
                          const std::function<void(int)>& on_end) {
  std::map<int, std::vector<LogRecord>> current;  // the batch being merged, per worker
  std::map<int, size_t> position;
  // (time_ns, worker), smallest first: the head record of each worker that has one.
  using Head = std::tuple<int64_t, int>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  auto advance = [&](int w) {  // puts w's next record among the heads, or ends w
    if (++position[w] < current[w].size()) {
      heads.emplace(LauncherTime(w, current[w][position[w]]), w);
      return;
    }
    position[w] = 0;
    if (Next(w, current[w])) {
      heads.emplace(LauncherTime(w, current[w][0]), w);
    } else {
      current.erase(w);
      if (!Cancelled()) on_end(w);
    }
  };
  std::vector<int> workers;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [w, source] : sources_) workers.push_back(w);
  }
  for (int w : workers) {
    position[w] = static_cast<size_t>(-1);
    current[w];
    advance(w);
  }
  while (!heads.empty()) {
    auto [time, w] = heads.top();
    heads.pop();
    on_record(w, current[w][position[w]]);
    advance(w);
    if (Cancelled()) return;
  }
}

}  // namespace podrun
