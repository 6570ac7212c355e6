// LogMergeQueue: merges workers' logs in time order in bounded batches (docs/design.md decision
// 12), for `podrun logs` without -f. Each worker's reader thread pushes its records batch by
// batch and blocks while that worker already has kMaxQueuedBatches waiting; the consumer takes
// the record with the smallest (time_ns, worker) among the heads of all workers, waiting for a
// worker's next batch when it needs it. Memory: about (kMaxQueuedBatches + 1) batches per
// worker, whatever the length of the logs.
//
// Threads: Push and End from one producer thread per worker (never several workers on one
// thread: a producer blocks), Drain and Cancel from the consumer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include "proto/log_record.h"

namespace podrun {

class LogMergeQueue {
 public:
  static constexpr size_t kMaxQueuedBatches = 2;

  // `clock_offsets`: each worker's clock minus the launcher's (measured at Hello), so that
  // records are merged by the launcher's clock, not by workers' clocks that need not agree.
  explicit LogMergeQueue(const std::vector<int>& workers,
                         std::map<int, int64_t> clock_offsets = {});

  // Queues the next batch of `worker`'s records (in sequence order); blocks while the worker
  // has kMaxQueuedBatches queued. False once Cancel was called (stop reading).
  bool Push(int worker, std::vector<LogRecord> batch);
  // `worker` has no more records (call it however the reading ended).
  void End(int worker);

  // Calls on_record(worker, record) in merged order and on_end(worker) once each worker's
  // records are all out; returns when every worker has ended (or after Cancel).
  void Drain(const std::function<void(int worker, const LogRecord& record)>& on_record,
             const std::function<void(int worker)>& on_end);
  // Stops: Push returns false from now on, Drain returns.
  void Cancel();

 private:
  struct Source {
    std::deque<std::vector<LogRecord>> queued;
    bool ended = false;
  };
  // Blocks until `worker` has a batch queued or has ended; moves the batch into `current`.
  bool Next(int worker, std::vector<LogRecord>& current);
  bool Cancelled();
  int64_t LauncherTime(int worker, const LogRecord& record) const;

  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<int, Source> sources_;
  bool cancelled_ = false;
  const std::map<int, int64_t> clock_offsets_;
};

}  // namespace podrun
