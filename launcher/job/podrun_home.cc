// Resolves and creates the launcher's state directory and its per-job directories.
#include "launcher/job/podrun_home.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "launcher/error.h"

namespace podrun {
namespace {

std::optional<std::string> NonEmpty(const EnvLookup& lookup, const std::string& name) {
  std::optional<std::string> value = lookup(name);
  if (value && value->empty()) return std::nullopt;
  return value;
}

// Creates `dir` and its missing parents; `dir` itself gets mode 0700.
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

}  // namespace

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
  return home;
}

std::filesystem::path JobDir(const std::filesystem::path& home, const std::string& job_id) {
  if (job_id.empty() || job_id.find('/') != std::string::npos || job_id[0] == '.') {
    throw UsageError("bad job id '" + job_id + "'");
  }
  std::filesystem::path dir = home / "jobs" / job_id;
  MakeDirectory(dir);
  return dir;
}

}  // namespace podrun
