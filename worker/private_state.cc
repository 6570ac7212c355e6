// The agent's umask and the checks of its state directory (see private_state.h).
#include "worker/private_state.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace podrun::agent {
namespace {

constexpr mode_t kPrivateUmask = 077;

bool g_umask_restricted = false;  // set once, before any thread exists
mode_t g_job_umask = 0;

}  // namespace

void RestrictUmask() {
  g_job_umask = ::umask(kPrivateUmask);
  g_umask_restricted = true;
}

mode_t JobUmask() {
  if (g_umask_restricted) return g_job_umask;
  mode_t current = ::umask(kPrivateUmask);
  ::umask(current);
  return current;
}

void CheckPrivateDirectory(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    throw std::runtime_error(dir.string() + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir.string() + " is not a directory");
  if (st.st_uid != ::geteuid()) {
    throw std::runtime_error(dir.string() + " belongs to uid " + std::to_string(st.st_uid) +
                             ", not to this user (uid " + std::to_string(::geteuid()) +
                             "): refusing to keep the agent's state there");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw std::runtime_error(dir.string() + " is open to other users (mode " + mode +
                             "): refusing to keep the agent's state there; make it private "
                             "with: chmod 700 " +
                             dir.string());
  }
}

void RefuseSymlink(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    throw std::runtime_error(path.string() +
                             " is a symbolic link: the agent never follows links in its state "
                             "directory (remove it)");
  }
}

}  // namespace podrun::agent
