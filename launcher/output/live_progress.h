// The launch's phases as one live line on a terminal's stderr, redrawn in place:
//   agents 16/16 · sync 16/16 (12.0 MB) · mounts 16/16 · prepare 11/16 · waiting for w3 (4 s)
// naming the workers that hold the current phase up once it has lasted kNameAfter. Not on a
// terminal, nothing is drawn (the plain progress lines say the same). Lines printed meanwhile
// start with ClearPrefix(), so that they replace the live line instead of running into it;
// the ticker draws it again below them.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/output/ticker_thread.h"

namespace podrun {

class LiveProgress {
 public:
  static constexpr auto kNameAfter = std::chrono::seconds(3);
  using Clock = std::chrono::steady_clock;

  // Draws on `fd` when `terminal` (by default: when `fd` is a terminal), every 200 ms.
  explicit LiveProgress(int fd, std::optional<bool> terminal = std::nullopt,
                        std::function<Clock::time_point()> clock = nullptr);
  // Clears the line (as End).
  ~LiveProgress();
  LiveProgress(const LiveProgress&) = delete;
  LiveProgress& operator=(const LiveProgress&) = delete;

  // A new phase, waiting for `workers`; the previous one stays on the line with its count.
  void BeginPhase(const std::string& name, const std::vector<int>& workers);
  // Shown after the current phase's count: "sync 16/16 (12.0 MB)".
  void SetDetail(const std::string& detail);
  // `worker` is through the current phase (done or failed).
  void Done(int worker);
  // Clears the line for good (before the job's own output starts).
  void End();

  // The line as it would be drawn now (without the terminal controls).
  std::string Render() const;

  // "\r\x1b[K" while a live line is on a terminal, else "": what a line printed to stderr meanwhile
  // starts with.
  static std::string ClearPrefix();

 private:
  struct Phase {
    std::string name;
    size_t total = 0;
    std::set<int> waiting;
    Clock::time_point began;
    std::string detail;
  };
  void Draw();

  const int fd_;
  const bool terminal_;
  std::function<Clock::time_point()> clock_;
  mutable std::mutex mutex_;
  std::vector<Phase> phases_;
  bool ended_ = false;
  std::optional<TickerThread> ticker_;  // last: stopped first
  static std::atomic<int> live_;        // LiveProgress objects drawing now
};

}  // namespace podrun
