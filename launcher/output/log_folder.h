// LogFolder: the gathering behind `podrun logs --fold` (ClusterShell's `clush -b`, done live).
// Fed each selected worker's lines as they come, it prints line N of a stream once, labelled
// with the whole worker set, when every selected worker printed the same line N; otherwise it
// prints each worker's line N with its own label. Line N is emitted once every selected worker
// has reached it or ended, so the folder works while following a running job.
//
// Bounded (docs/design.md decision 12): when the lines held for slower workers pass max_held_bytes
// on a stream, the oldest line index is emitted as far as it is known (identical lines of the
// workers that reached it folded together), and each worker that had not reached it prints its
// line of that index unfolded when it comes.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/output/labelled_output.h"

namespace podrun {

class LogFolder {
 public:
  // Receives the folded output: `workers` (sorted) printed `text` (one line, no newline).
  using Emit =
      std::function<void(const std::vector<int>& workers, Stream stream, std::string_view text)>;

  // `workers`: the selected workers; `emit` is called in line order on each stream, from the
  // thread that fed the line that completed it. Not thread-safe: callers serialize.
  // `max_held_bytes`: 0 for kHeldBytesPerWorker per selected worker.
  LogFolder(std::vector<int> workers, Emit emit, size_t max_held_bytes = 0);

  static constexpr size_t kHeldBytesPerWorker = 1 << 20;

  // One complete line of `worker` on `stream`. Throws std::invalid_argument for a worker that
  // was not selected, or one that has ended.
  void AddLine(int worker, Stream stream, std::string_view text);
  // `worker` has no more lines; what was waiting for it is emitted.
  void End(int worker);

  // Lines held until slower workers reach them.
  size_t held_lines() const;

 private:
  // The lines of one stream not yet emitted, per worker; their heads share one line index.
  using Pending = std::map<int, std::deque<std::string>>;

  void Drain(Stream stream);
  // Emits the oldest held line index of `stream` as far as it is known.
  void ForceOldest(Stream stream);
  static size_t Cost(std::string_view text) { return text.size() + kLineOverheadBytes; }

  static constexpr size_t kLineOverheadBytes = 64;  // bookkeeping counted per held line

  std::vector<int> workers_;
  Emit emit_;
  std::set<int> ended_;
  Pending pending_[2];
  size_t held_bytes_[2] = {0, 0};
  size_t max_held_bytes_;
  std::map<int, size_t> owed_[2];  // per worker: line indexes already emitted without it
};

}  // namespace podrun
