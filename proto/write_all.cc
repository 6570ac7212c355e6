// See write_all.h.
#include "proto/write_all.h"

#include <limits.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace podrun {

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool WriteAllOf(int fd, std::span<const std::string_view> pieces) {
  std::vector<iovec> iov;
  size_t next = 0;    // the first piece not wholly written
  size_t offset = 0;  // bytes of pieces[next] written already
  while (next < pieces.size()) {
    iov.clear();
    for (size_t i = next; i < pieces.size() && iov.size() < IOV_MAX; ++i) {
      const size_t skip = i == next ? offset : 0;
      iov.push_back({const_cast<char*>(pieces[i].data() + skip), pieces[i].size() - skip});
    }
    ssize_t n = ::writev(fd, iov.data(), static_cast<int>(iov.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto left = static_cast<size_t>(n);
    while (next < pieces.size() && left >= pieces[next].size() - offset) {
      left -= pieces[next].size() - offset;
      offset = 0;
      ++next;
    }
    offset += left;
  }
  return true;
}

}  // namespace podrun
