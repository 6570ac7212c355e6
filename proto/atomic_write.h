// Replacing a file in one piece, for the launcher and the agent alike: readers see the old file
// or the whole new one, never a part.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace podrun {

// Writes `content` to a scratch file beside `path` (`<path>.podrun-<pid>-<random>`, created
// exclusively with `mode` less the umask, never through a symbolic link), flushes it to disk when
// `durable`, then renames it over `path`. On failure the scratch file is removed (a full disk
// keeps no half-written file) and std::system_error is thrown naming the file and the step.
void ReplaceFileAtomically(const std::filesystem::path& path, std::string_view content, mode_t mode,
                           bool durable);

}  // namespace podrun
