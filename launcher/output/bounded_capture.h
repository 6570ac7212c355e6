// BoundedCapture: what `exec --json` keeps of one stream of one worker: the first head_bytes
// and the last tail_bytes of it, and how many bytes in between were dropped. Memory: at most
// head_bytes + 2 * tail_bytes, whatever is appended. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace podrun {

// exec --json keeps the first and the last MiB of each stream of each worker.
inline constexpr size_t kJsonHeadBytes = 1 << 20;
inline constexpr size_t kJsonTailBytes = 1 << 20;

class BoundedCapture {
 public:
  explicit BoundedCapture(size_t head_bytes = kJsonHeadBytes, size_t tail_bytes = kJsonTailBytes)
      : head_bytes_(head_bytes), tail_bytes_(tail_bytes) {}

  void Append(std::string_view data);
  // The kept text: the whole stream if nothing was dropped, else its head then its tail.
  std::string text() const;
  // Bytes of the stream that are not in text() (0: complete).
  uint64_t dropped_bytes() const { return total_ - head_.size() - KeptTail().size(); }
  uint64_t total_bytes() const { return total_; }

 private:
  std::string_view KeptTail() const;

  size_t head_bytes_;
  size_t tail_bytes_;
  uint64_t total_ = 0;
  std::string head_;
  std::string tail_;  // ends with the stream's last bytes; trimmed to tail_bytes_ when 2x
};

}  // namespace podrun
