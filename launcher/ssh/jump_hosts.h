// Jump hosts done in process (docs/reference.md: -J, ssh_config's ProxyJump): one SSH session to a
// jump host carries a direct-tcpip channel per worker, bridged to a local socketpair on which
// the worker's own SshSession runs (end to end encrypted and host-key checked as any worker),
// so a pod behind a bastion costs one connection to it and no `ssh` process at all.
// Event-loop thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "launcher/ssh/jump_spec.h"
#include "launcher/ssh/ssh_options.h"
#include "launcher/ssh/ssh_session.h"
#include "launcher/ssh/ssh_transport.h"

namespace podrun {

// At most this many hops: deeper is a ProxyJump loop in ssh_config.
constexpr int kMaxJumpHops = 8;

// The jump host sessions of one command, shared by all its connections: the session to a chain's
// last hop is made once, on first use, and handed to every later caller while it lives. Destroy
// it (or Close it) on the loop, before the loop: the sessions it holds belong there.
class JumpHosts {
 public:
  explicit JumpHosts(asio::any_io_executor executor);
  ~JumpHosts();
  JumpHosts(const JumpHosts&) = delete;
  JumpHosts& operator=(const JumpHosts&) = delete;

  // The session to `chain`'s last hop, connected through the hops before it (recursively, by
  // this registry) with the pod's `options` — key, known_hosts and host-key strictness alike
  // (docs/design.md decision 13), not -l and -p, which name the workers' user and port, as with
  // `ssh -J`. Callers that come while it is being connected wait for that one attempt; a lost
  // session is replaced. Throws Error(kUnreachable) "jump host HOP: reason".
  asio::awaitable<std::shared_ptr<SshSession>> Get(const JumpChain& chain,
                                                   const SshOptions& options);

  // Lets go of the sessions (each lives on while a connection through it does); later Get
  // calls connect anew. For a command whose loop runs until no work is left (keepalives are).
  void Close();

  // How many jump host connections were made so far.
  int connections() const { return connections_; }

 private:
  struct Entry;
  asio::any_io_executor executor_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // by JumpChainToString
  int connections_ = 0;
};

// Reaches `host`:`port` through the last hop of `chain`: a direct-tcpip channel of its session
// (from `jumps`, else a session of its own) bridged to a new socketpair. Returns the transport
// (whose Failure() tells a lost jump host) and the socket for the worker's libssh session.
// Throws Error(kUnreachable) naming the jump host; TransportRefused when `host` refused.
asio::awaitable<StartedTransport> ConnectThroughJump(
    JumpHosts* jumps, const JumpChain& chain, const std::string& host, unsigned int port,
    const SshOptions& options, std::chrono::steady_clock::time_point deadline);

}  // namespace podrun
