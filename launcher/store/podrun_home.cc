// Resolves, creates and checks the launcher's state directory and its per-job directories.
#include "launcher/store/podrun_home.h"

#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "launcher/base/error.h"
#include "proto/private_state.h"

namespace podrun {
namespace {

std::optional<std::string> NonEmpty(const EnvLookup& lookup, const std::string& name) {
  std::optional<std::string> value = lookup(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// Creates `dir` (mode 0700) and its missing parents; an existing `dir` is left as it is.
void MakeDirectory(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return;
  if (dir.has_parent_path()) {
    std::filesystem::create_directories(dir.parent_path(), ec);
    if (ec) throw UsageError(dir.parent_path().string() + ": cannot create: " + ec.message());
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw UsageError(dir.string() + ": cannot create: " + std::strerror(errno));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    throw UsageError(dir.string() + ": exists and is not a directory");
  }
}

// Creates `dir` (0700) inside a private directory unless it exists; refuses a symbolic link or
// anything but a directory in its place.
void MakePrivateSubdirectory(const std::filesystem::path& dir) {
  RefuseSymlink(dir);
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw UsageError(dir.string() + ": cannot create: " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    throw UsageError(dir.string() + ": " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) RefuseSymlink(dir);
  if (!S_ISDIR(st.st_mode)) throw UsageError(dir.string() + ": exists and is not a directory");
}

}  // namespace

void CheckPrivateDirectory(const std::filesystem::path& dir, const std::string& what) {
  if (auto problem = PrivateDirectoryProblem(dir)) {
    throw UsageError(fmt::format("refusing to keep podrun's state in {} ({}): {}", dir.string(),
                                 what, *problem));
  }
}

void RefuseSymlink(const std::filesystem::path& path) {
  if (auto problem = SymlinkProblem(path)) throw UsageError(*problem);
}

std::filesystem::path PodrunHome(const EnvLookup& lookup) {
  std::filesystem::path home;
  if (auto dir = NonEmpty(lookup, "PODRUN_HOME")) {
    home = std::filesystem::absolute(*dir);
  } else if (auto xdg = NonEmpty(lookup, "XDG_STATE_HOME"); xdg && xdg->front() == '/') {
    home = std::filesystem::path(*xdg) / "podrun";
  } else {
    std::optional<std::string> user_home = NonEmpty(lookup, "HOME");
    if (!user_home) {
      if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) {
        user_home = pw->pw_dir;
      }
    }
    if (!user_home) throw UsageError("cannot find the home directory: set PODRUN_HOME");
    home = std::filesystem::path(*user_home) / ".local" / "state" / "podrun";
  }
  MakeDirectory(home);
  CheckPrivateDirectory(home, "PODRUN_HOME");
  for (const char* entry :
       {"podrun.db", "podrun.db-wal", "podrun.db-shm", "podrun.db-journal", "jobs", "local"}) {
    RefuseSymlink(home / entry);
  }
  return home;
}

std::filesystem::path JobDir(const std::filesystem::path& home, const std::string& job_id) {
  if (job_id.empty() || job_id.find('/') != std::string::npos || job_id[0] == '.') {
    throw UsageError("bad job id '" + job_id + "'");
  }
  MakePrivateSubdirectory(home / "jobs");
  std::filesystem::path dir = home / "jobs" / job_id;
  MakePrivateSubdirectory(dir);
  return dir;
}

}  // namespace podrun
