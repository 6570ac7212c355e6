// The user's home, and the workdir a job runs in.
#pragma once

#include <filesystem>
#include <string>

namespace podrun::agent {

// The user's home: $HOME, else the user's entry in /etc/passwd, else "/".
std::filesystem::path UserHome();

// "~", "~/x" and relative paths resolve under $HOME; the directory is created if missing.
// Returns the absolute, canonical path. Throws AgentError.
std::filesystem::path ResolveWorkdir(const std::string& workdir);

}  // namespace podrun::agent
