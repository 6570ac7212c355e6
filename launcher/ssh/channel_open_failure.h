// Why a server refused to open a channel, by the reason code of its channel-open failure
// message rather than by its description text: the text is the server's own words (free to
// say anything, "Connection refused" included), the code is the protocol's answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace podrun {

// The reason code of the channel-open failure that libssh reported, given the session's
// ssh_get_error_code() and ssh_get_error(). libssh 0.10 keeps the code only in the text it
// formats itself, "Channel opening failure: channel <n> error (<code>) <server's words>": the
// code is read from that prefix, which precedes anything the server wrote. nullopt when the
// error is not a channel-open failure (another kind, or not that prefix).
std::optional<uint32_t> ChannelOpenFailureReason(int error_code, std::string_view error);

}  // namespace podrun
