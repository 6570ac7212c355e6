// Merging, printing and keeping the workers' logs on the launcher's side.
#include "launcher/log_merger.h"

#include <fcntl.h>
#include <unistd.h>

namespace podrun {

LogMerger::LogMerger(const std::filesystem::path& dir, bool color, bool prefix)
    : dir_(dir), screen_(STDOUT_FILENO, STDERR_FILENO, color, prefix) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  merged_fd_.reset(::open((dir_ / "merged.log").c_str(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (merged_fd_.get() >= 0) {
    merged_file_ = std::make_unique<LabelledOutput>(merged_fd_.get(), merged_fd_.get(), false);
  }
}

void LogMerger::Add(int worker, const std::vector<LogRecord>& records) {
  std::lock_guard lock(mutex_);
  int record_fd = -1;
  if (!dir_.empty()) {
    UniqueFd& fd = record_fds_[worker];
    if (fd.get() < 0) {
      fd.reset(::open((dir_ / ("w" + std::to_string(worker) + ".log")).c_str(),
                      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
    }
    record_fd = fd.get();
  }
  auto& tail = tails_[worker];
  for (const LogRecord& r : records) {
    Stream stream = r.stream == LogStream::kStderr ? Stream::kStderr : Stream::kStdout;
    screen_.Write(worker, stream, r.data);
    if (merged_file_) merged_file_->Write(worker, stream, r.data);
    if (record_fd >= 0) {
      try {
        AppendRecord(record_fd, r);
      } catch (const std::exception&) {
        record_fd = -1;  // a full disk here must not stop the job; the agents keep the log
      }
    }
    tail_splitters_[worker].Feed(r.data, [&](std::string_view line) {
      tail.emplace_back(line);
      if (tail.size() > kTailLines) tail.pop_front();
    });
  }
}

void LogMerger::Finish(int worker) {
  std::lock_guard lock(mutex_);
  screen_.Finish(worker);
  if (merged_file_) merged_file_->Finish(worker);
  auto& tail = tails_[worker];
  tail_splitters_[worker].Finish([&](std::string_view line) {
    tail.emplace_back(line);
    if (tail.size() > kTailLines) tail.pop_front();
  });
}

std::vector<std::string> LogMerger::LastLines(int worker) const {
  std::lock_guard lock(mutex_);
  auto it = tails_.find(worker);
  if (it == tails_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

}  // namespace podrun
