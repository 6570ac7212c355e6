// LZ4 compression of stream-log's batches (docs/decisions.md, "Compressed log stream").
// Each batch of frames becomes one independent LZ4 block inside a wire frame of its own kind,
// so the reader keeps no compression state between batches: its memory does not grow with
// the output, only with the number of streams it reads at once. LZ4 rather than zstd: the
// launcher decompresses what every worker sends, and LZ4 does that about five times faster.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace podrun {

// A batch larger than this is sent as it is (the reader refuses larger compressed batches).
inline constexpr size_t kMaxCompressedBatchBytes = 4u << 20;

// The sender's side: decides per batch whether compressing is worth it.
class WireCompressor {
 public:
  WireCompressor();

  // `frames`: the pieces of complete wire frames, in order. Returns the one compressed frame
  // (header included) to send instead when it saves at least a tenth, else nullopt: send the
  // pieces as they are. After a batch that did not compress, the next kSkipAfterMiss batches
  // are not tried (output that does not compress costs little CPU).
  std::optional<std::string_view> Compress(std::span<const std::string_view> frames);

 private:
  static constexpr size_t kMinBytes = 512;   // smaller batches are sent as they are
  static constexpr int kSkipAfterMiss = 16;  // batches not tried after one that did not pay

  std::string state_;            // LZ4's compression state
  std::string in_;               // the batch's frames, contiguous
  std::unique_ptr<char[]> out_;  // header, size and block (not zero-filled for each batch)
  size_t out_capacity_ = 0;
  int skip_ = 0;
};

// The reader's side: the content of one compressed batch's payload (u32 content size, then
// an LZ4 block) of at most kMaxCompressedBatchBytes. The returned view stays valid until the
// next call on this thread. Throws std::runtime_error if the payload is not such a batch.
std::string_view DecompressWireBatch(std::string_view payload);

}  // namespace podrun
