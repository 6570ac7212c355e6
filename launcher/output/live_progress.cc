// See live_progress.h.
#include "launcher/output/live_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include "proto/write_all.h"

namespace podrun {

std::atomic<int> LiveProgress::live_{0};

LiveProgress::LiveProgress(int fd, std::optional<bool> terminal,
                           std::function<Clock::time_point()> clock)
    : fd_(fd),
      terminal_(terminal ? *terminal : ::isatty(fd) == 1),
      clock_(clock ? std::move(clock) : [] { return Clock::now(); }) {
  if (!terminal_) return;
  ++live_;
  ticker_.emplace(std::chrono::milliseconds(200), [this] { Draw(); });
}

LiveProgress::~LiveProgress() { End(); }

void LiveProgress::BeginPhase(const std::string& name, const std::vector<int>& workers) {
  std::lock_guard lock(mutex_);
  phases_.push_back({name, workers.size(), {workers.begin(), workers.end()}, clock_(), {}});
}

void LiveProgress::SetDetail(const std::string& detail) {
  std::lock_guard lock(mutex_);
  if (!phases_.empty()) phases_.back().detail = detail;
}

void LiveProgress::Done(int worker) {
  std::lock_guard lock(mutex_);
  if (!phases_.empty()) phases_.back().waiting.erase(worker);
}

void LiveProgress::End() {
  ticker_.reset();  // no Draw after this
  std::lock_guard lock(mutex_);
  if (ended_ || !terminal_) return;
  ended_ = true;
  --live_;
  WriteAll(fd_, "\r\x1b[K");
}

std::string LiveProgress::Render() const {
  std::lock_guard lock(mutex_);
  std::string line;
  for (const Phase& p : phases_) {
    if (!line.empty()) line += " \u00b7 ";
    line += fmt::format("{} {}/{}", p.name, p.total - p.waiting.size(), p.total);
    if (!p.detail.empty()) line += " (" + p.detail + ")";
  }
  if (phases_.empty()) return line;
  const Phase& current = phases_.back();
  const auto lasted = clock_() - current.began;
  if (!current.waiting.empty() && lasted >= kNameAfter) {
    std::string names;
    size_t shown = 0;
    for (int w : current.waiting) {
      if (shown++ == 5) {
        names += fmt::format(" and {} more", current.waiting.size() - 5);
        break;
      }
      names += fmt::format("{}w{}", names.empty() ? "" : ", ", w);
    }
    line += fmt::format(" \u00b7 waiting for {} ({} s)", names,
                        std::chrono::duration_cast<std::chrono::seconds>(lasted).count());
  }
  return line;
}

void LiveProgress::Draw() {
  const std::string line = Render();
  if (line.empty()) return;
  std::lock_guard lock(mutex_);
  if (ended_) return;
  WriteAll(fd_, "\r\x1b[K" + line);
}

std::string LiveProgress::ClearPrefix() { return live_.load() > 0 ? "\r\x1b[K" : ""; }

}  // namespace podrun
