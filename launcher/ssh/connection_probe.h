// Telling a connection the peer ended from one that is still up, by errno rather than by the
// wording of an error message: how SshSession decides that a failed handshake is worth another
// try (an sshd past MaxStartups closes or resets new connections before its banner).
#pragma once

namespace podrun {

enum class ConnectionEnd {
  kOpen,          // nothing says the peer has gone (no data, or unread data, waiting)
  kClosedByPeer,  // orderly end: the peer closed its side (EOF)
  kReset,         // ECONNRESET, ECONNABORTED, EPIPE, ECONNREFUSED, ETIMEDOUT on the socket
};

// Looks at `fd` (a socket or a pipe; a dup of libssh's, which libssh may have closed already)
// without consuming anything and without blocking. Any other error counts as kOpen.
ConnectionEnd ProbeConnection(int fd);

}  // namespace podrun
