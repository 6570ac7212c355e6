// Head and tail of a stream, for exec --json.
#include "launcher/output/bounded_capture.h"

#include <algorithm>

namespace podrun {

void BoundedCapture::Append(std::string_view data) {
  total_ += data.size();
  if (head_.size() < head_bytes_) {
    size_t n = std::min(data.size(), head_bytes_ - head_.size());
    head_.append(data.substr(0, n));
    data.remove_prefix(n);
  }
  if (data.empty() || tail_bytes_ == 0) return;
  if (data.size() >= tail_bytes_) {
    tail_.assign(data.substr(data.size() - tail_bytes_));
    return;
  }
  tail_.append(data);
  if (tail_.size() >= 2 * tail_bytes_) tail_.erase(0, tail_.size() - tail_bytes_);
}

std::string_view BoundedCapture::KeptTail() const {
  std::string_view tail(tail_);
  if (tail.size() > tail_bytes_) tail.remove_prefix(tail.size() - tail_bytes_);
  return tail;
}

std::string BoundedCapture::text() const {
  std::string out = head_;
  out.append(KeptTail());
  return out;
}

}  // namespace podrun
