// Copying between stdio and the agent's socket with poll() and non-blocking fds.
#include "worker/dial_stdio.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

constexpr size_t kBufferBytes = 256u << 10;

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Bytes read from one fd and not yet written to the other.
struct Buffer {
  std::string data = std::string(kBufferBytes, '\0');
  size_t begin = 0;
  size_t end = 0;
  bool empty() const { return begin == end; }
};

// Reads into an empty buffer; false on EOF or a hard error (errno tells which: 0 is EOF).
bool Fill(int fd, Buffer& buf) {
  ssize_t n = ::read(fd, buf.data.data(), buf.data.size());
  if (n > 0) {
    buf.begin = 0;
    buf.end = static_cast<size_t>(n);
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n == 0) errno = 0;
  return false;
}

// Writes what it can; false on a hard error.
bool Drain(int fd, Buffer& buf) {
  ssize_t n = ::write(fd, buf.data.data() + buf.begin, buf.end - buf.begin);
  if (n >= 0) {
    buf.begin += static_cast<size_t>(n);
    return true;
  }
  return errno == EAGAIN || errno == EINTR;
}

}  // namespace

int DialStdio(const std::filesystem::path& socket_path) {
  ::signal(SIGPIPE, SIG_IGN);
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.string().size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "podrun-agent dial-stdio: socket path too long: %s\n",
                 socket_path.c_str());
    return 1;
  }
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  if (!sock || ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    std::fprintf(stderr, "podrun-agent dial-stdio: connect %s: %s\n", socket_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  SetNonBlocking(sock.get());
  SetNonBlocking(STDIN_FILENO);
  SetNonBlocking(STDOUT_FILENO);

  Buffer up, down;         // stdin → socket, socket → stdout
  bool stdin_open = true;  // until EOF on stdin
  bool sock_open = true;   // until EOF on the socket
  bool sock_write_shut = false;
  while (sock_open || !down.empty()) {
    pollfd fds[3];
    nfds_t n = 0;
    int in_i = -1, sock_i = -1, out_i = -1;
    if (stdin_open && up.empty()) {
      in_i = static_cast<int>(n);
      fds[n++] = {STDIN_FILENO, POLLIN, 0};
    }
    short sock_events = 0;
    if (sock_open && down.empty()) sock_events |= POLLIN;
    if (!up.empty()) sock_events |= POLLOUT;
    if (sock_events) {
      sock_i = static_cast<int>(n);
      fds[n++] = {sock.get(), sock_events, 0};
    }
    if (!down.empty()) {
      out_i = static_cast<int>(n);
      fds[n++] = {STDOUT_FILENO, POLLOUT, 0};
    }
    if (n == 0) break;
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      std::perror("podrun-agent dial-stdio: poll");
      return 1;
    }
    if (in_i >= 0 && fds[in_i].revents) {
      if (!Fill(STDIN_FILENO, up)) stdin_open = false;
    }
    if (sock_i >= 0 && (fds[sock_i].revents & (POLLIN | POLLHUP | POLLERR)) && sock_open &&
        down.empty()) {
      if (!Fill(sock.get(), down)) {
        if (errno != 0) {
          std::fprintf(stderr, "podrun-agent dial-stdio: read socket: %s\n", std::strerror(errno));
          return 1;
        }
        sock_open = false;
      }
    }
    if (!up.empty() && sock_i >= 0 && (fds[sock_i].revents & (POLLOUT | POLLERR))) {
      if (!Drain(sock.get(), up)) {
        std::fprintf(stderr, "podrun-agent dial-stdio: write socket: %s\n", std::strerror(errno));
        return 1;
      }
    }
    if (out_i >= 0 && fds[out_i].revents) {
      if (!Drain(STDOUT_FILENO, down)) return 0;  // the reader of stdout is gone
    }
    if (!stdin_open && up.empty() && !sock_write_shut) {
      ::shutdown(sock.get(), SHUT_WR);  // pass the half-close on
      sock_write_shut = true;
    }
  }
  ::close(STDOUT_FILENO);
  return 0;
}

}  // namespace podrun::agent
