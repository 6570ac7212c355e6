// Unix stream sockets by path (see unix_socket.h).
#include "worker/base/unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

namespace podrun::agent {
namespace {

std::optional<sockaddr_un> Address(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof addr.sun_path) return std::nullopt;
  std::memcpy(addr.sun_path, path.c_str(), path.string().size() + 1);
  return addr;
}

}  // namespace

UniqueFd ListenUnix(const std::filesystem::path& path) {
  auto addr = Address(path);
  if (!addr) throw std::runtime_error("socket path too long: " + path.string());
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  ::unlink(path.c_str());
  if (!fd || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0 ||
      ::listen(fd.get(), 16) != 0) {
    throw std::runtime_error("listen on " + path.string() + ": " + std::strerror(errno));
  }
  return fd;
}

UniqueFd ConnectUnix(const std::filesystem::path& path) {
  auto addr = Address(path);
  if (!addr) return {};
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&*addr), sizeof *addr) != 0) {
    return {};
  }
  return fd;
}

}  // namespace podrun::agent
