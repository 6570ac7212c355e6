// Reading and writing the plain files of a job attempt's directory (see job_dir.h).
#include "worker/jobdir/job_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <system_error>

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

void WriteFileAtomically(const std::filesystem::path& path, std::string_view content,
                         bool durable) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) throw std::system_error(errno, std::generic_category(), "create " + tmp.string());
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::unlink(tmp.c_str());  // a full disk must not keep a half-written file
      throw std::system_error(err, std::generic_category(), "write " + tmp.string());
    }
    done += static_cast<size_t>(n);
  }
  if (durable && ::fsync(fd.get()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(err, std::generic_category(), "fsync " + tmp.string());
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::system_error(errno, std::generic_category(), "rename " + path.string());
  }
}

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
