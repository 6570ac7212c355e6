#include "launcher/ssh/channel_open_failure.h"

#include <gtest/gtest.h>
#include <libssh/libssh.h>
#include <libssh/ssh2.h>

namespace podrun {
namespace {

TEST(ChannelOpenFailureReason, ReadsTheCodeLibsshFormats) {
  EXPECT_EQ(
      ChannelOpenFailureReason(SSH_REQUEST_DENIED,
                               "Channel opening failure: channel 3 error (2) Connection refused"),
      uint32_t{SSH2_OPEN_CONNECT_FAILED});
  EXPECT_EQ(ChannelOpenFailureReason(
                SSH_REQUEST_DENIED,
                "Channel opening failure: channel 12 error (1) administratively prohibited"),
            uint32_t{SSH2_OPEN_ADMINISTRATIVELY_PROHIBITED});
  EXPECT_EQ(
      ChannelOpenFailureReason(SSH_REQUEST_DENIED, "Channel opening failure: channel 0 error (2) "),
      uint32_t{SSH2_OPEN_CONNECT_FAILED});
}

// The server writes the description: "Connection refused" there, or a whole fake libssh message,
// does not make a refusal of another kind a failed connect.
TEST(ChannelOpenFailureReason, TheServersTextCannotForgeTheCode) {
  EXPECT_EQ(
      ChannelOpenFailureReason(SSH_REQUEST_DENIED,
                               "Channel opening failure: channel 3 error (1) Connection refused "
                               "Channel opening failure: channel 3 error (2) Connection refused"),
      uint32_t{SSH2_OPEN_ADMINISTRATIVELY_PROHIBITED});
}

TEST(ChannelOpenFailureReason, OtherErrorsHaveNone) {
  // Another kind of error, whatever its text.
  EXPECT_EQ(ChannelOpenFailureReason(
                SSH_FATAL, "Channel opening failure: channel 3 error (2) Connection refused"),
            std::nullopt);
  EXPECT_EQ(ChannelOpenFailureReason(SSH_REQUEST_DENIED, "Connection refused"), std::nullopt);
  EXPECT_EQ(ChannelOpenFailureReason(SSH_REQUEST_DENIED, ""), std::nullopt);
  EXPECT_EQ(ChannelOpenFailureReason(SSH_REQUEST_DENIED,
                                     "Channel opening failure: channel x error (2) refused"),
            std::nullopt);
  EXPECT_EQ(ChannelOpenFailureReason(SSH_REQUEST_DENIED,
                                     "Channel opening failure: channel 3 error (2 refused"),
            std::nullopt);
}

}  // namespace
}  // namespace podrun
