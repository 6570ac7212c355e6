// State is private (docs/design.md decision 14), on both sides: podrun and podrun-agent run with
// umask 077, keep their state in a directory that is their user's alone, and never follow a
// symbolic link planted in it. The processes they start for the user (a job, exec --local's
// command) get back the umask they themselves were started with.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

namespace podrun {

// Sets the process umask to 077 and remembers the one it replaced (InheritedUmask). Call once,
// first thing in main, before any thread exists.
void RestrictUmask();

// The umask the process was started with (the user's), for the processes it starts for the
// user. Before RestrictUmask: the current umask. Async-signal-safe after RestrictUmask.
mode_t InheritedUmask();

// Why `dir` may not hold state, with how to fix it, or nullopt when it may: it must be a
// directory (a symbolic link to one is followed: the user's own ~/.podrun -> /mnt/disk/podrun),
// owned by this process's effective user, and closed to group and others (mode & 077 == 0).
std::optional<std::string> PrivateDirectoryProblem(const std::filesystem::path& dir);

// Why `path` may not be used, or nullopt: it exists as a symbolic link (state files and
// directories inside a state directory are never followed out of it).
std::optional<std::string> SymlinkProblem(const std::filesystem::path& path);

}  // namespace podrun
