// Jump hosts as the user names them (docs/reference.md: `-J, --jump`, ssh_config's ProxyJump): a
// chain of `[user@]host[:port]` hops, first hop first, as `ssh -J` takes it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/pod/host_list.h"

namespace podrun {

// A chain of jump hosts, the one this machine connects to first. Empty: no jump (a direct
// connection, as `ProxyJump none`).
using JumpChain = std::vector<HostSpec>;

// Parses a -J / `pod: {jump: ...}` / ProxyJump value: comma-separated `[user@]host[:port]`
// entries (ParseHostSpec's syntax), or "none" (an empty chain). Throws Error(kUsage) naming
// the entry at fault.
JumpChain ParseJumpChain(const std::string& value);

// The chain back as a -J value ("root@10.0.0.2,bastion:2222"); "none" for an empty chain.
std::string JumpChainToString(const JumpChain& chain);

// libssh 0.10 reads ssh_config's `ProxyJump J1,J2` as the ProxyCommand
// `ssh [-l USER] [-p PORT] [-J J2] -W '[%h]:%p' J1` (it would run OpenSSH's ssh for it).
// Recognizes exactly that form and returns the chain it stands for (J1 first); nullopt for any
// other command, which stays a ProxyCommand. Throws Error(kUsage) if the hops are malformed.
std::optional<JumpChain> JumpChainOfProxyCommand(const std::string& proxy_command);

}  // namespace podrun
