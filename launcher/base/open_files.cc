// See open_files.h.
#include "launcher/base/open_files.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "launcher/base/error.h"

namespace podrun {

void EnsureOpenFiles(size_t workers) {
  const rlim_t needed = kOpenFilesBase + kOpenFilesPerWorker * workers;
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;  // nothing to learn: try anyway
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur >= needed) return;
  if (limit.rlim_cur == RLIM_INFINITY) return;
  if (limit.rlim_max != RLIM_INFINITY && limit.rlim_max < needed) {
    throw UsageError(fmt::format(
        "{} workers need about {} open files, but this shell allows at most {} (ulimit -Hn); "
        "raise the hard limit (e.g. in /etc/security/limits.conf) or use fewer workers",
        workers, needed, limit.rlim_max));
  }
  limit.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    throw UsageError(fmt::format("{} workers need about {} open files: setrlimit: {}", workers,
                                 needed, std::strerror(errno)));
  }
}

}  // namespace podrun
