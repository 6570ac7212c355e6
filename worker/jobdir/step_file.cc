// See step_file.h.
#include "worker/jobdir/step_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun::agent {
namespace {

constexpr size_t kMaxRecordBytes = 64u << 10;  // 256 + 64 points of two varints, and more

[[noreturn]] void Fail(int err, const std::string& what) {
  throw std::system_error(err, std::generic_category(), what);
}

}  // namespace

std::filesystem::path StepFilePath(const JobDir& dir) { return dir.path() / "steps"; }

void WriteStepFile(const JobDir& dir, const v1::StepRecord& record) {
  const std::string bytes = record.SerializeAsString();
  const std::filesystem::path path = StepFilePath(dir);
  const std::filesystem::path tmp = dir.path() / ("steps.tmp." + std::to_string(::getpid()));
  ::unlink(tmp.c_str());  // a scratch file left by a crash (or planted): never written through
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) Fail(errno, "create " + tmp.string());
  if (!WriteAll(fd.get(), bytes)) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Fail(err, "write " + tmp.string());
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Fail(err, "rename " + path.string());
  }
}

std::optional<v1::StepRecord> ReadStepFile(const JobDir& dir) {
  UniqueFd fd(::open(StepFilePath(dir).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      static_cast<size_t>(st.st_size) > kMaxRecordBytes) {
    return std::nullopt;
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  v1::StepRecord record;
  if (!record.ParseFromString(bytes)) return std::nullopt;
  return record;
}

}  // namespace podrun::agent
