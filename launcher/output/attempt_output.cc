// Merging, printing and keeping the workers' logs on the launcher's side.
#include "launcher/output/attempt_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "launcher/output/copy_mark.h"
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

AttemptOutput::~AttemptOutput() {
  ticker_.reset();
  std::lock_guard lock(mutex_);
  Mark(/*force=*/true);
}

int AttemptOutput::WorkerFd(int worker) {
  UniqueFd& fd = worker_fds_[worker];
  if (fd.get() < 0) {
    fd.reset(::open((dir_ / ("w" + std::to_string(worker) + ".log")).c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  }
  return fd.get();
}

void AttemptOutput::Mark(bool force) {
  if (dir_.empty() || merged_fd_.get() < 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - marked_ < kMarkEvery) return;
  marked_ = now;
  CopyMark mark;
  struct stat st {};
  if (::fstat(merged_fd_.get(), &st) != 0) return;
  mark.merged_size = static_cast<uint64_t>(st.st_size);
  for (const auto& [worker, next] : next_seq_) {
    CopyMark::Worker& w = mark.workers[worker];
    w.next_seq = next;
    const int fd = WorkerFd(worker);
    if (fd < 0 || ::fstat(fd, &st) != 0) return;  // no mark rather than a wrong one
    w.copy_size = static_cast<uint64_t>(st.st_size);
    w.out = screen_.Held(worker, Stream::kStdout);
    w.err = screen_.Held(worker, Stream::kStderr);
  }
  // Whole or not at all: a new file renamed over the last (one driver per job: the name is
  // its own). Not synced: it guards against a driver's death, not the machine's.
  const std::filesystem::path path = dir_ / "copied.mark";
  const std::filesystem::path scratch = dir_ / "copied.mark.new";
  UniqueFd fd(::open(scratch.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0 || !WriteAll(fd.get(), FormatCopyMark(mark))) return;
  fd.reset();
  (void)::rename(scratch.c_str(), path.c_str());
}

std::map<int, uint64_t> AttemptOutput::Resume() {
  std::lock_guard lock(mutex_);
  if (dir_.empty() || merged_fd_.get() < 0) return {};
  std::optional<CopyMark> mark;
  {
    std::ifstream in(dir_ / "copied.mark", std::ios::binary);
    if (in) {
      std::stringstream text;
      text << in.rdbuf();
      mark = ParseCopyMark(text.str());
    }
  }
  // A mark past the end of a copy (the machine crashed: the mark reached the disk, the copy's
  // last writes did not) would pad that copy with NUL bytes up to it: dropped.
  if (mark && !MarkWithinCopies(*mark)) mark.reset();
  if (!mark) mark.emplace();  // from the first record: what the copies hold is written again
  bool cut = ::ftruncate(merged_fd_.get(), static_cast<off_t>(mark->merged_size)) == 0;
  // Every wK.log there, also of workers the mark does not name (then: emptied).
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() < 5 || name[0] != 'w' || !name.ends_with(".log")) continue;
    int worker = 0;
    try {
      size_t used = 0;
      worker = std::stoi(name.substr(1, name.size() - 5), &used);
      if (used != name.size() - 5) continue;
    } catch (const std::exception&) {
      continue;
    }
    auto it = mark->workers.find(worker);
    const int fd = WorkerFd(worker);
    cut = cut && fd >= 0 &&
          ::ftruncate(
              fd, static_cast<off_t>(it == mark->workers.end() ? 0 : it->second.copy_size)) == 0;
  }
  if (!cut) WarnCopyFailed("merged.log");
  std::map<int, uint64_t> from;
  for (auto& [worker, w] : mark->workers) {
    screen_.Restore(worker, Stream::kStdout, std::move(w.out));
    screen_.Restore(worker, Stream::kStderr, std::move(w.err));
    from[worker] = w.next_seq;
    next_seq_[worker] = w.next_seq;
  }
  return from;
}

bool AttemptOutput::MarkWithinCopies(const CopyMark& mark) {
  struct stat st {};
  if (::fstat(merged_fd_.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < mark.merged_size) {
    return false;
  }
  for (const auto& [worker, w] : mark.workers) {
    const int fd = WorkerFd(worker);
    if (fd < 0 || ::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < w.copy_size) {
      return false;
    }
  }
  return true;
}

void AttemptOutput::WarnCopyFailed(const std::string& what) {
  if (warned_) return;
  warned_ = true;
  Say("warning: the launcher's copy of the log (" + (dir_ / what).string() +
      ") is incomplete: " + std::strerror(errno));
}

void AttemptOutput::Add(int worker, const std::vector<LogRecord>& records) {
  std::lock_guard lock(mutex_);
  const int worker_fd = dir_.empty() ? -1 : WorkerFd(worker);
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
  if (worker_fd >= 0) worker_drops_[worker].Wrote(worker_fd);
  if (merged_fd_.get() >= 0) merged_drop_.Wrote(merged_fd_.get());
  if (!records.empty()) next_seq_[worker] = records.back().seq + 1;
  Mark(/*force=*/false);
}

void AttemptOutput::Finish(int worker) {
  std::lock_guard lock(mutex_);
  screen_.Finish(worker);
  Mark(/*force=*/true);
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
