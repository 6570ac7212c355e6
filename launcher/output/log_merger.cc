// Merging, printing and keeping the workers' logs on the launcher's side.
#include "launcher/output/log_merger.h"

#include <fcntl.h>
#include <unistd.h>

namespace podrun {

LogMerger::LogMerger(const std::filesystem::path& dir, bool color, bool prefix)
    : dir_(dir), screen_(STDOUT_FILENO, STDERR_FILENO, color, prefix) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  merged_fd_.reset(::open((dir_ / "merged.log").c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (merged_fd_.get() >= 0) screen_.Tee(merged_fd_.get());
}

void LogMerger::Add(int worker, const std::vector<LogRecord>& records) {
  std::lock_guard lock(mutex_);
  int worker_fd = -1;
  if (!dir_.empty()) {
    UniqueFd& fd = worker_fds_[worker];
    if (fd.get() < 0) {
      fd.reset(::open((dir_ / ("w" + std::to_string(worker) + ".log")).c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
    }
    worker_fd = fd.get();
  }
  std::string& tail = tails_[worker];
  for (const LogRecord& r : records) {
    screen_.Write(worker, r.stream == LogStream::kStderr ? Stream::kStderr : Stream::kStdout,
                  r.data);
    if (worker_fd >= 0) WriteAll(worker_fd, r.data);
    // Keep only the end: the failure report needs the last lines, not the whole log.
    if (r.data.size() >= kTailBytes) {
      tail.assign(r.data, r.data.size() - kTailBytes, kTailBytes);
    } else {
      tail.append(r.data);
      if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
    }
  }
}

void LogMerger::Finish(int worker) {
  std::lock_guard lock(mutex_);
  screen_.Finish(worker);
}

std::vector<std::string> LogMerger::LastLines(int worker) const {
  std::lock_guard lock(mutex_);
  auto it = tails_.find(worker);
  if (it == tails_.end()) return {};
  std::vector<std::string> lines;
  LineSplitter splitter;
  auto keep = [&](std::string_view line) { lines.emplace_back(line); };
  splitter.Feed(it->second, keep);
  splitter.Finish(keep);
  if (lines.size() > kTailLines) lines.erase(lines.begin(), lines.end() - kTailLines);
  return lines;
}

}  // namespace podrun
