// The connection holder's private directory.
#include "launcher/persist/holder_paths.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace podrun {

HolderPaths HolderPathsIn(const std::filesystem::path& podrun_home) {
  HolderPaths p;
  p.dir = podrun_home / "holder";
  p.socket = p.dir / "holder.sock";
  p.lock = p.dir / "holder.lock";
  p.log = p.dir / "holder.log";
  return p;
}

std::optional<std::string> PrepareHolderDir(const HolderPaths& paths) {
  if (paths.socket.native().size() >= sizeof(sockaddr_un{}.sun_path)) {
    return fmt::format("{}: path too long for a unix socket", paths.socket.string());
  }
  if (::mkdir(paths.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return fmt::format("{}: {}", paths.dir.string(), std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(paths.dir.c_str(), &st) != 0) {
    return fmt::format("{}: {}", paths.dir.string(), std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("{}: not a directory", paths.dir.string());
  if (st.st_uid != ::geteuid()) return fmt::format("{}: owned by another user", paths.dir.string());
  if ((st.st_mode & 077) != 0) {
    return fmt::format("{}: open to others (mode {:o})", paths.dir.string(), st.st_mode & 0777);
  }
  return std::nullopt;
}

std::optional<std::string> SocketPathProblem(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::nullopt;
    return fmt::format("{}: {}", path.string(), std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) return fmt::format("{}: not a socket", path.string());
  if (st.st_uid != ::geteuid()) return fmt::format("{}: owned by another user", path.string());
  return std::nullopt;
}

}  // namespace podrun
