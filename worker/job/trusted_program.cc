// See trusted_program.h.
#include "worker/job/trusted_program.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string_view>

namespace podrun::agent {
namespace {

// `path` with every symbolic link resolved; "" when it does not resolve.
std::string Resolved(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), std::free);
  return real ? std::string(real.get()) : std::string();
}

// Owned by root, writable by no one else.
bool RootOnly(const struct stat& st) { return st.st_uid == 0 && (st.st_mode & 022) == 0; }

// Every directory from "/" down to `real` (resolved, a directory) is RootOnly.
bool TrustedChain(const std::string& real) {
  std::string prefix = "/";
  struct stat st {};
  if (::stat(prefix.c_str(), &st) != 0 || !RootOnly(st)) return false;
  size_t begin = 1;
  while (begin < real.size()) {
    const size_t end = real.find('/', begin);
    prefix = real.substr(0, end);
    if (::lstat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !RootOnly(st)) return false;
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return true;
}

}  // namespace

bool IsTrustedDirectory(const std::string& dir) {
  const std::string real = Resolved(dir);
  return !real.empty() && TrustedChain(real);
}

bool IsTrustedProgram(const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  const std::string real = Resolved(path);
  if (real.empty()) return false;
  struct stat st {};
  if (::lstat(real.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || !RootOnly(st) ||
      (st.st_mode & 0111) == 0) {
    return false;
  }
  const size_t slash = real.rfind('/');
  return TrustedChain(slash == 0 ? "/" : real.substr(0, slash));
}

std::string FindTrustedProgram(const std::vector<std::string>& dirs, const std::string& name) {
  for (const std::string& dir : dirs) {
    if (dir.empty() || dir.front() != '/') continue;  // a relative PATH entry is never searched
    const std::string path = dir + "/" + name;
    if (::access(path.c_str(), X_OK) == 0 && IsTrustedProgram(path)) return Resolved(path);
  }
  return "";
}

std::vector<std::string> ProgramSearchDirs() {
  std::vector<std::string> dirs;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "";
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    dirs.emplace_back(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
  }
  for (const char* dir :
       {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}) {
    dirs.emplace_back(dir);
  }
  return dirs;
}

}  // namespace podrun::agent
