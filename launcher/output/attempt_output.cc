// Merging, printing and keeping the workers' logs on the launcher's side.
#include "launcher/output/attempt_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/output/say.h"

namespace podrun {

AttemptOutput::AttemptOutput(const std::filesystem::path& dir, bool color, bool prefix)
    : dir_(dir), screen_(STDOUT_FILENO, STDERR_FILENO, color, prefix) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  merged_fd_.reset(::open((dir_ / "merged.log").c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (merged_fd_.get() >= 0) {
    screen_.Tee(merged_fd_.get());
  } else {
    WarnCopyFailed("merged.log");
  }
  ticker_.emplace(kTickPeriod, [this] {
    std::lock_guard lock(mutex_);
    screen_.Tick();
  });
}

AttemptOutput::~AttemptOutput() { ticker_.reset(); }

void AttemptOutput::WarnCopyFailed(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  Say("warning: the launcher's copy of the log (" + (dir_ / what).string() +
      ") is incomplete: " + std::strerror(errno));
}

void AttemptOutput::Add(int worker, const std::vector<LogRecord>& records) {
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
  if (worker_fd < 0 && !dir_.empty()) WarnCopyFailed("w" + std::to_string(worker) + ".log");
  size_t tee_failures = screen_.tee_failures();
  std::string& tail = tails_[worker];
  std::vector<std::string_view> copy;  // the batch for wK.log: one write, not one per record
  copy.reserve(records.size());
  for (const LogRecord& r : records) {
    screen_.Write(worker, r.stream == LogStream::kStderr ? Stream::kStderr : Stream::kStdout,
                  r.data);
    if (worker_fd >= 0) copy.push_back(r.data);
    // Keep only the end: the failure report needs the last lines, not the whole log.
    if (r.data.size() >= kTailBytes) {
      tail.assign(r.data, r.data.size() - kTailBytes, kTailBytes);
    } else {
      tail.append(r.data);
      if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
    }
  }
  if (screen_.tee_failures() != tee_failures) WarnCopyFailed("merged.log");
  if (!copy.empty() && !WriteAllOf(worker_fd, copy)) {
    WarnCopyFailed("w" + std::to_string(worker) + ".log");
  }
}

void AttemptOutput::Finish(int worker) {
  std::lock_guard lock(mutex_);
  screen_.Finish(worker);
}

std::vector<std::string> AttemptOutput::LastLines(int worker) const {
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
