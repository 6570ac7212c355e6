// Dropping the launcher's log copies from the page cache behind their writer.
#include "launcher/output/drop_behind.h"

#include <fcntl.h>
#include <unistd.h>

namespace podrun {

void DropBehind::Wrote(int fd) {
  const off_t at = ::lseek(fd, 0, SEEK_CUR);
  if (at < 0) return;
  const auto end = static_cast<uint64_t>(at);
  if (end < asked_) asked_ = from_ = 0;  // cut back (Resume): start again from the file's head
  if (end - asked_ < kChunkBytes) return;
#ifdef POSIX_FADV_DONTNEED
  // One call does both: Linux starts writing back the range's dirty pages (the new chunk) and
  // drops its clean ones (the chunk before, written back since the last call). Pages still
  // being written are kept, and dropped by the next call.
  (void)::posix_fadvise(fd, static_cast<off_t>(from_), static_cast<off_t>(end - from_),
                        POSIX_FADV_DONTNEED);
#endif
  from_ = asked_;
  asked_ = end;
}

}  // namespace podrun
