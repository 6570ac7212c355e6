// See atomic_file.h.
#include "launcher/base/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "launcher/base/error.h"
#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun {

void WriteFileAtomically(const std::filesystem::path& path, std::string_view content, mode_t mode) {
  auto fail = [&](const std::string& what) {
    return Error(ExitCode::kFailed, fmt::format("{}: {}", path.string(), what));
  };
  std::random_device random;
  const std::string scratch =
      fmt::format("{}.podrun-{}-{:08x}", path.string(), ::getpid(), random());
  UniqueFd fd(::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw fail(std::strerror(errno));
  if (!WriteAll(fd.get(), content) || ::fsync(fd.get()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(scratch.c_str());
    throw fail(why);
  }
  fd.reset();
  if (::rename(scratch.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(scratch.c_str());
    throw fail(why);
  }
}

}  // namespace podrun
