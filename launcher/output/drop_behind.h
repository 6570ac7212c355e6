// DropBehind: keeps a file that is written now and read later (the launcher's copies of the
// logs) from taking the page cache, like `dd oflag=nocache`: every kChunkBytes it writes, the
// kernel is asked to start writing the new pages back and to drop the ones before them, which by
// then are on disk (docs/decisions.md, "The launcher's copies of the logs"). A job printing a
// few lines a second never reaches a chunk in minutes; one printing 100 MB/s reuses a few MiB of
// cache instead of taking fresh memory for every byte.
#pragma once

#include <cstdint>

namespace podrun {

class DropBehind {
 public:
  static constexpr uint64_t kChunkBytes = 8u << 20;

  // Call after writing to `fd` (a regular file opened for writing, appended to). Cheap when no
  // chunk is due: one lseek. Failures are ignored (it is advice).
  void Wrote(int fd);

 private:
  uint64_t asked_ = 0;  // the end of the last chunk whose write-back was asked for
  uint64_t from_ = 0;   // where the next drop starts: the chunk before asked_
};

}  // namespace podrun
