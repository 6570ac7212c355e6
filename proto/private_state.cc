// The process umask and the checks of a state directory (see private_state.h).
#include "proto/private_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace podrun {
namespace {

constexpr mode_t kPrivateUmask = 077;

bool g_umask_restricted = false;  // set once, before any thread exists
mode_t g_inherited_umask = 0;

}  // namespace

void RestrictUmask() {
  g_inherited_umask = ::umask(kPrivateUmask);
  g_umask_restricted = true;
}

mode_t InheritedUmask() {
  if (g_umask_restricted) return g_inherited_umask;
  mode_t current = ::umask(kPrivateUmask);
  ::umask(current);
  return current;
}

std::optional<std::string> PrivateDirectoryProblem(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) return dir.string() + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir.string() + " is not a directory";
  if (st.st_uid != ::geteuid()) {
    // By uid: the static agent must not call getpwuid (NSS needs the build's shared glibc).
    return dir.string() + " belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " +
           std::to_string(::geteuid()) + "): use a directory of your own";
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return dir.string() + " is open to other users (mode " + mode +
           "); make it private with: chmod 700 " + dir.string();
  }
  return std::nullopt;
}

std::optional<std::string> SymlinkProblem(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return path.string() + " is a symbolic link: state is never followed out of its directory " +
           "(remove the link)";
  }
  return std::nullopt;
}

}  // namespace podrun
