// The command's side of a tunnel through the holder.
#include "launcher/persist/held_tunnel.h"

#include <fcntl.h>

#include "launcher/persist/holder_ask.h"

namespace podrun {

asio::awaitable<std::optional<HeldTunnel>> OpenHeldTunnel(const std::filesystem::path& socket,
                                                          const HolderRequest& request) {
  std::optional<HolderAnswer> answer = co_await AskHolder(socket, request, /*exact_reply=*/true);
  if (!answer) co_return std::nullopt;
  HeldTunnel tunnel;
  tunnel.description = answer->reply.host;
  tunnel.address = answer->reply.address;
  tunnel.reused = answer->reply.reused;
  tunnel.dial_stdio = answer->reply.dial_stdio;
  tunnel.fd = answer->socket->release();
  ::fcntl(tunnel.fd, F_SETFL, ::fcntl(tunnel.fd, F_GETFL) | O_NONBLOCK);
  ::fcntl(tunnel.fd, F_SETFD, FD_CLOEXEC);
  co_return tunnel;
}

}  // namespace podrun
