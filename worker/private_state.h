// The agent's state is private (DESIGN.md decision 14): it runs with umask 077, its directory
// (~/.podrun, or --home) is its user's alone, and nothing in it is followed as a symbolic link.
// Jobs, though, run with the umask the agent was started with, as they would from a login
// shell.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>

namespace podrun::agent {

// Sets the process umask to 077 and remembers the one it replaced (JobUmask). Call once, first
// thing in main, before any thread exists.
void RestrictUmask();

// The umask the agent was started with (the login shell's), for the job's process.
// Before RestrictUmask: the current umask. Async-signal-safe after RestrictUmask.
mode_t JobUmask();

// Throws std::runtime_error, saying how to fix it, unless `dir` is a directory owned by this
// process's effective user and closed to group and others (mode & 077 == 0). `dir` itself may
// be a symbolic link (the user's own: ~/.podrun -> /mnt/disk/podrun); its target is checked.
void CheckPrivateDirectory(const std::filesystem::path& dir);

// Throws std::runtime_error if `path` exists as a symbolic link.
void RefuseSymlink(const std::filesystem::path& path);

}  // namespace podrun::agent
