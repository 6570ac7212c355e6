// See channel_open_failure.h.
#include "launcher/ssh/channel_open_failure.h"

#include <libssh/libssh.h>

#include <charconv>

namespace podrun {
namespace {

// Removes `prefix` from the front of `text`; false if `text` does not start with it.
bool Consume(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

// Removes a decimal number from the front of `text` into `value`; false if there is none.
bool ConsumeNumber(std::string_view& text, uint32_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return true;
}

}  // namespace

std::optional<uint32_t> ChannelOpenFailureReason(int error_code, std::string_view error) {
  if (error_code != SSH_REQUEST_DENIED) return std::nullopt;
  uint32_t channel = 0, code = 0;
  if (Consume(error, "Channel opening failure: channel ") && ConsumeNumber(error, channel) &&
      Consume(error, " error (") && ConsumeNumber(error, code) && Consume(error, ")")) {
    return code;
  }
  return std::nullopt;
}

}  // namespace podrun
