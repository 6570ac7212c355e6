#include "worker/base/own_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "worker/base/agent_error.h"

namespace podrun::agent {
namespace {

[[noreturn]] void Refuse(std::string_view what, const std::filesystem::path& path,
                         const std::string& why) {
  throw AgentError(ErrorKind::kFailedPrecondition,
                   std::string(what) + " " + path.string() + ": " + why);
}

[[noreturn]] void RefuseParent(const std::filesystem::path& path, const std::string& why) {
  throw AgentError(ErrorKind::kFailedPrecondition, "sync: " + path.string() + " " + why);
}

}  // namespace

void CheckOwnDirectory(const std::filesystem::path& dir, std::string_view what) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) Refuse(what, dir, ErrnoMessage());
  if (S_ISLNK(st.st_mode)) Refuse(what, dir, "is a symlink; give the real directory");
  if (!S_ISDIR(st.st_mode)) Refuse(what, dir, "not a directory");
  if (st.st_uid != ::geteuid()) {
    Refuse(what, dir,
           "owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
               std::to_string(::geteuid()) + "); another user could change what runs there");
  }
  if ((st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && st.st_gid != ::getegid())) {
    Refuse(what, dir, "writable by other users; chmod go-w it");
  }
}

bool RealParentDirectories(const std::filesystem::path& root, const std::filesystem::path& relative,
                           bool create) {
  std::filesystem::path at = root;
  for (auto part = relative.begin(); part != relative.end(); ++part) {
    if (std::next(part) == relative.end()) break;  // the last part is the entry itself
    at /= *part;
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) {
      if (errno != ENOENT) RefuseParent(at, ErrnoMessage("cannot be read"));
      if (!create) return false;
      if (::mkdir(at.c_str(), 0755) != 0 && errno != EEXIST) {
        RefuseParent(at, ErrnoMessage("cannot be made"));
      }
      if (::lstat(at.c_str(), &st) != 0) RefuseParent(at, ErrnoMessage("cannot be read"));
    }
    if (S_ISLNK(st.st_mode)) {
      RefuseParent(at, "is a symlink on the worker; the sync writes nothing through it");
    }
    if (!S_ISDIR(st.st_mode)) {
      RefuseParent(at, "is a file on the worker; the synced tree has a directory there");
    }
  }
  return true;
}

}  // namespace podrun::agent
