// Which of a process's output streams a chunk of output came from.
#pragma once

namespace podrun {

enum class Stream { kStdout = 0, kStderr = 1 };

}  // namespace podrun
