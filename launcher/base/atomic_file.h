// Writing a file the user named in one piece: readers see the old file or the whole new one,
// never a part. The content goes to a new file beside it (created exclusively, never through
// a symbolic link), is flushed to disk, then renamed over the target.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace podrun {

// Writes `content` to `path` atomically, with `mode` (less the umask). Throws Error(kFailed)
// naming the path when it cannot.
void WriteFileAtomically(const std::filesystem::path& path, std::string_view content,
                         mode_t mode = 0644);

}  // namespace podrun
