// The user's home and a job's workdir (see workdir.h).
#include "worker/job/workdir.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "proto/home_path.h"
#include "worker/base/agent_error.h"
#include "worker/base/own_directory.h"

namespace podrun::agent {

std::filesystem::path UserHome() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  // Without NSS (getpwuid is unsafe in a static binary): look the uid up in /etc/passwd.
  std::ifstream passwd("/etc/passwd");
  const std::string uid = std::to_string(::getuid());
  for (std::string line; std::getline(passwd, line);) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, ':');) fields.push_back(field);
    if (fields.size() >= 6 && fields[2] == uid && !fields[5].empty()) return fields[5];
  }
  return "/";
}

std::filesystem::path ResolveWorkdir(const std::string& workdir) {
  const std::filesystem::path home = UserHome();
  std::filesystem::path path;
  if (workdir.empty()) {
    path = home;
  } else if (auto expanded = ExpandHome(workdir, home.string())) {
    path = *expanded;
  } else if (workdir.starts_with("~")) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "workdir " + workdir + ": only ~ and ~/ are expanded");
  } else {
    path = home / workdir;  // an absolute workdir replaces home
  }
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec)
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "workdir " + path.string() + ": " + ec.message());
  auto canonical = std::filesystem::canonical(path, ec);
  if (ec || !std::filesystem::is_directory(canonical)) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "workdir " + path.string() + ": " + (ec ? ec.message() : "not a directory"));
  }
  CheckOwnDirectory(canonical, "workdir");
  if (::access(canonical.c_str(), R_OK | W_OK | X_OK) != 0) {
    throw AgentError(ErrorKind::kFailedPrecondition, ErrnoMessage("workdir " + canonical.string()));
  }
  return canonical;
}

}  // namespace podrun::agent
