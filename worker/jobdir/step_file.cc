// See step_file.h.
#include "worker/jobdir/step_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include "proto/atomic_write.h"
#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun::agent {
namespace {

constexpr size_t kMaxRecordBytes = 64u << 10;  // 256 + 64 points of two varints, and more

}  // namespace

std::filesystem::path StepFilePath(const JobDir& dir) { return dir.path() / "steps"; }

void WriteStepFile(const JobDir& dir, const v1::StepRecord& record) {
  const std::string bytes = record.SerializeAsString();
  ReplaceFileAtomically(StepFilePath(dir), bytes, 0600, /*durable=*/false);
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
