// Reading and writing the plain files of a job attempt's directory (see job_dir.h).
#include "worker/jobdir/job_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

#include "proto/atomic_write.h"
#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

constexpr size_t kMaxJobIdLength = 128;

std::optional<std::string> ReadSmallFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
std::optional<T> ReadNumber(const std::filesystem::path& path) {
  auto text = ReadSmallFile(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  T value{};
  if (!(in >> value)) return std::nullopt;
  return value;
}

}  // namespace

bool IsValidJobId(std::string_view job_id) {
  if (job_id.empty() || job_id.size() > kMaxJobIdLength || job_id == "." || job_id == "..") {
    return false;
  }
  for (char c : job_id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

// A job file replaced in one piece (proto/atomic_write.h); `durable`: flushed to disk before the
// rename (the exit status: it must survive a crash of the machine). Throws std::system_error.
void WriteFileAtomically(const std::filesystem::path& path, std::string_view content,
                         bool durable = false) {
  ReplaceFileAtomically(path, content, 0644, durable);
}

}  // namespace

JobDir::JobDir(const std::filesystem::path& home, std::string_view job_id, uint32_t attempt)
    : path_(home / "jobs" / std::string(job_id) / std::to_string(attempt)) {}

bool JobDir::Exists() const {
  std::error_code ec;
  return std::filesystem::is_directory(path_, ec);
}

void JobDir::Create() const {
  std::filesystem::create_directories(path_);
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all);
}

void JobDir::WriteWorkerId(uint32_t worker_id) const {
  WriteFileAtomically(path_ / "worker_id", std::to_string(worker_id) + "\n");
}

void JobDir::WriteStarted(pid_t pid, int64_t start_time_ns) const {
  WriteFileAtomically(path_ / "start_time_ns", std::to_string(start_time_ns) + "\n");
  WriteFileAtomically(path_ / "pid", std::to_string(pid) + "\n");
}

void JobDir::WriteProcessEnd(const ProcessEnd& status) const {
  std::string text;
  if (status.exit_code) text += "exit_code " + std::to_string(*status.exit_code) + "\n";
  if (status.signal) text += "signal " + std::to_string(*status.signal) + "\n";
  if (status.never_started) text += "never_started 1\n";
  if (status.lost) text += "lost 1\n";
  if (status.killed) text += "killed 1\n";
  if (status.start_unconfirmed) text += "start_unconfirmed 1\n";
  text += "end_time_ns " + std::to_string(status.end_time_ns) + "\n";
  text += std::string("stopped_by_request ") + (status.stopped_by_request ? "1" : "0") + "\n";
  WriteFileAtomically(path_ / "exit_status", text, /*durable=*/true);
}

std::optional<uint32_t> JobDir::ReadWorkerId() const {
  return ReadNumber<uint32_t>(path_ / "worker_id");
}

std::optional<pid_t> JobDir::ReadPid() const { return ReadNumber<pid_t>(path_ / "pid"); }

std::optional<int64_t> JobDir::ReadStartTime() const {
  return ReadNumber<int64_t>(path_ / "start_time_ns");
}

std::optional<ProcessEnd> JobDir::ReadProcessEnd() const {
  auto text = ReadSmallFile(path_ / "exit_status");
  if (!text) return std::nullopt;
  ProcessEnd status;
  std::istringstream in(*text);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == "exit_code") status.exit_code = static_cast<int>(value);
    if (key == "signal") status.signal = static_cast<int>(value);
    if (key == "never_started") status.never_started = value != 0;
    if (key == "lost") status.lost = value != 0;
    if (key == "killed") status.killed = value != 0;
    if (key == "start_unconfirmed") status.start_unconfirmed = value != 0;
    if (key == "end_time_ns") status.end_time_ns = value;
    if (key == "stopped_by_request") status.stopped_by_request = value != 0;
  }
  if (!status.exit_code && !status.signal && !status.never_started && !status.lost) {
    return std::nullopt;
  }
  return status;
}

void JobDir::WriteSupervisor(const ProcessIdentity& id) const {
  WriteFileAtomically(path_ / "supervisor", id.ToString() + "\n");
}

void JobDir::WriteJobProcess(const ProcessIdentity& id) const {
  WriteFileAtomically(path_ / "job_process", id.ToString() + "\n");
}

std::optional<ProcessIdentity> JobDir::ReadSupervisor() const {
  auto text = ReadSmallFile(path_ / "supervisor");
  return text ? ProcessIdentity::Parse(*text) : std::nullopt;
}

std::optional<ProcessIdentity> JobDir::ReadJobProcess() const {
  auto text = ReadSmallFile(path_ / "job_process");
  return text ? ProcessIdentity::Parse(*text) : std::nullopt;
}

void JobDir::WriteLogGap(const LogGapInfo& gap) const {
  WriteFileAtomically(path_ / "log_gap",
                      "from_seq " + std::to_string(gap.from_seq) + "\nbytes " +
                          std::to_string(gap.bytes) + "\nchunks " + std::to_string(gap.chunks) +
                          "\ncause " + gap.cause + "\n",
                      /*durable=*/true);
}

std::optional<LogGapInfo> JobDir::ReadLogGap() const {
  auto text = ReadSmallFile(path_ / "log_gap");
  if (!text) return std::nullopt;
  LogGapInfo gap;
  std::istringstream in(*text);
  for (std::string key; in >> key;) {
    if (key == "cause") {
      std::getline(in >> std::ws, gap.cause);
    } else if (key == "from_seq") {
      in >> gap.from_seq;
    } else if (key == "bytes") {
      in >> gap.bytes;
    } else if (key == "chunks") {
      in >> gap.chunks;
    }
  }
  if (gap.chunks == 0) return std::nullopt;
  return gap;
}

}  // namespace podrun::agent
