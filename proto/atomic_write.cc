// See atomic_write.h.
#include "proto/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <string>
#include <system_error>

#include "proto/unique_fd.h"
#include "proto/write_all.h"

namespace podrun {

void ReplaceFileAtomically(const std::filesystem::path& path, std::string_view content, mode_t mode,
                           bool durable) {
  std::random_device random;
  char suffix[48];
  std::snprintf(suffix, sizeof(suffix), ".podrun-%d-%08x", static_cast<int>(::getpid()),
                static_cast<unsigned>(random()));
  const std::string scratch = path.string() + suffix;
  auto fail = [&](int err, const char* step) {
    ::unlink(scratch.c_str());
    throw std::system_error(err, std::generic_category(), std::string(step) + " " + path.string());
  };
  UniqueFd fd(::open(scratch.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw std::system_error(errno, std::generic_category(), "create " + scratch);
  if (!WriteAll(fd.get(), content)) fail(errno, "write");
  if (durable && ::fsync(fd.get()) != 0) fail(errno, "fsync");
  fd.reset();
  if (::rename(scratch.c_str(), path.c_str()) != 0) fail(errno, "rename over");
}

}  // namespace podrun
