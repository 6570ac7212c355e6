// The SSH settings of a pod, and how they are combined with the user's ssh_config for one
// connection (docs/design.md decision 13: ssh_config may add, never weaken). ssh_config is read
// first; the options given to podrun are set after it, so they win; the host-key settings are
// always podrun's own, whatever ssh_config says.
#pragma once

#include <libssh/libssh.h>

#include <chrono>
#include <optional>
#include <string>

#include "launcher/pod/host_list.h"
#include "launcher/ssh/jump_spec.h"

namespace podrun {

// Settings shared by every connection of a pod (docs/reference.md, "Selecting the pod").
struct SshOptions {
  std::optional<std::string> default_user;  // -l: for hosts that don't say
  std::optional<int> default_port;          // -p: for hosts that don't say
  std::optional<std::string> identity;      // -i: else ssh-agent, then default key files
  std::optional<std::string> ssh_config;    // -F: else ~/.ssh/config and /etc/ssh/ssh_config
  std::string known_hosts;                  // file to check and record host keys in
  bool strict_host_keys = false;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // A connection the server refused or reset (sshd not listening yet, or saturated) is tried
  // again until connect_timeout. Off for a reconnection: its caller tries again after a pause,
  // and asks meanwhile whether the VM is gone (a preempted VM refuses until it is).
  bool retry_refused = true;
  std::chrono::milliseconds keepalive_interval{std::chrono::seconds(15)};
  // -J: every connection goes through this chain (an empty one: directly), whatever ssh_config
  // says, as with `ssh -J`; nullopt: ssh_config's ProxyJump or ProxyCommand decide.
  std::optional<JumpChain> jump;
  // How far down a jump chain this connection is: 0 for a worker, 1 for its (last) jump host,
  // and so on. Set by JumpHosts; bounds a ProxyJump loop in ssh_config.
  int jump_depth = 0;
};

// Where one connection goes once ssh_config and podrun's options are combined.
struct SshTarget {
  std::string address;     // after ssh_config's HostName
  unsigned int port = 22;  // the explicit one if given, else ssh_config's, else 22
  std::string user;        // likewise; libssh's default (the local user) when none
  // Through these jump hosts, first hop first (-J, else ssh_config's ProxyJump); empty: none.
  JumpChain jump;
  std::string proxy_command;  // ssh_config's ProxyCommand, tokens unexpanded; empty: none
  // Neither: a direct TCP connection.

  // "user@address:port", for messages.
  std::string Describe() const;
};

// Configures a fresh session `s` for `target`: the host, then ssh_config (`options.ssh_config`,
// else the user's and the system's), then podrun's explicit user, port and known_hosts over it,
// then the host-key settings (PinHostKeyOptions). Returns where the session will connect and
// how: `options.jump` if set, else ssh_config's ProxyJump (which libssh 0.10 hands over as a
// ProxyCommand running OpenSSH's ssh: JumpChainOfProxyCommand turns it back into a chain, done
// in process), else its ProxyCommand. A jump host's own ProxyJump that names itself (`Host *`)
// is ignored for it.
// Throws Error(kUnreachable) naming the option and the host when libssh refuses a value or
// cannot read the ssh_config file.
SshTarget ConfigureSession(ssh_session s, const HostSpec& target, const SshOptions& options);

// The ciphers podrun offers where this CPU has AES and carry-less multiply instructions: libssh's
// own set, AES-GCM first (libssh and OpenSSH put ChaCha20-Poly1305 first for CPUs without
// them). nullptr elsewhere: libssh's order stands. An ssh_config's Ciphers replaces it.
const char* PreferredCiphers();

// A string option of session `s` as libssh holds it now ("" when unset or unreadable).
std::string GetStringOption(ssh_session s, ssh_options_e option);

// libssh's ssh_options_set, checked: throws Error(kUnreachable) "<host>: cannot set <name>:
// <libssh's reason>" when it fails.
void SetSshOption(ssh_session s, ssh_options_e option, const void* value, const char* name,
                  const std::string& host);

}  // namespace podrun
