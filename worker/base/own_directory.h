// Trust boundary (docs/reliability.md): paths the agent writes through must be its user's own.
#pragma once

#include <filesystem>
#include <string_view>

namespace podrun::agent {

// Throws AgentError (kFailedPrecondition, naming `what` and the path) unless `dir` is a real
// directory (not a symlink) that no other user can change: owned by this process's user, not
// world-writable, and group-writable only for the user's own primary group.
void CheckOwnDirectory(const std::filesystem::path& dir, std::string_view what);

// Walks `relative` (a safe relative path, see IsSafeManifestPath) below `root` and refuses a
// symlink or non-directory among its parents; with `create`, missing parents are made (0755).
// Returns false when a parent is missing and `create` is false.
bool RealParentDirectories(const std::filesystem::path& root, const std::filesystem::path& relative,
                           bool create);

}  // namespace podrun::agent
