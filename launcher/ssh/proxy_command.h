// ssh_config's ProxyCommand, run as OpenSSH runs it: `/bin/sh -c "exec COMMAND"` with the
// tokens expanded, its stdin and stdout the SSH connection, its stderr podrun's. A command
// that cannot start or exits is the failure of the one connection it served, with a message
// naming the command, never a signal that ends podrun (the socket is written with
// MSG_NOSIGNAL by libssh and the child gets SIGPIPE's default back).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <string>

#include "launcher/ssh/ssh_options.h"
#include "launcher/ssh/ssh_transport.h"

namespace podrun {

// Expands OpenSSH's ProxyCommand tokens: %h the host (after HostName), %p the port, %r the
// remote user, %n the host as given, %% a '%'. Throws Error(kUnreachable) naming the command
// for any other token.
std::string ExpandProxyCommand(const std::string& command, const SshTarget& where,
                               const std::string& original_host);

// Starts `command` (already expanded). Throws Error(kUnreachable) when no process can be
// started at all (no /bin/sh, fork failure); a command the shell cannot find or run starts,
// exits at once and is reported by the transport's Failure(). The transport's destructor
// ends the process (SIGHUP, as OpenSSH; SIGKILL if it is still there) and reaps it.
StartedTransport StartProxyCommand(const std::string& command,
                                   const asio::any_io_executor& executor);

}  // namespace podrun
