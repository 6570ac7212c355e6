// What to do with a server's host key, given what known_hosts says (docs/reference.md: unknown keys
// are recorded unless --strict-host-keys; a changed key is always refused). The decision is
// podrun's own: ssh_config's UserKnownHostsFile, GlobalKnownHostsFile and StrictHostKeyChecking
// never reach it (docs/design.md decision 13; PinHostKeyOptions).
#pragma once

#include <libssh/libssh.h>

#include <string>

namespace podrun {

enum class HostKeyAction {
  kAccept,         // known and matching
  kRecord,         // unknown: accept and append to known_hosts (accept-new)
  kRefuseUnknown,  // unknown under --strict-host-keys
  kRefuseChanged,  // known with another key (or another key type): possible attack
  kError,          // known_hosts could not be read
};

HostKeyAction DecideHostKey(ssh_known_hosts_e state, bool strict_host_keys);

// The system-wide known_hosts file, trusted besides the user's (as OpenSSH does): it can only
// add known keys, and a key it lists differently from the server's is refused like any other.
inline constexpr const char* kSystemKnownHosts = "/etc/ssh/ssh_known_hosts";

// Makes the host-key settings of `s` podrun's own, whatever ssh_config set before: the user's
// known_hosts file is `known_hosts`, the global one kSystemKnownHosts, and libssh's
// StrictHostKeyChecking is on (off, libssh reports a key found in neither file as known, and a
// changed one as known when the global file does not list the host). Call after
// ssh_options_parse_config. Throws Error(kUnreachable) naming the option and `host`.
void PinHostKeyOptions(ssh_session s, const std::string& known_hosts, const std::string& host);

// True when `s`'s known_hosts files are still the ones PinHostKeyOptions set: checked again
// just before the host key is judged.
bool HostKeyOptionsPinned(ssh_session s, const std::string& known_hosts);

// The comment podrun writes after a key it pinned from what the VM published through the cloud
// API (docs/reference.md, "Host keys from the API"): a refusal then says that the machine
// answering is not that VM, rather than how to remove the key.
inline constexpr const char* kPublishedKeyComment = "podrun-pin:published-by-the-vm";

// The user-facing reason for a refusal, naming host, key type and SHA256 fingerprint, and
// what to do about it. `known_key`: the key known_hosts holds for the host ("ssh-ed25519
// SHA256:..."), named beside the offered one when a changed key is refused ("" when unknown).
// `published`: that key is one the VM published, pinned by podrun: the machine answering is
// not that VM, and removing the pin is never advised.
std::string HostKeyRefusal(HostKeyAction action, const std::string& host,
                           const std::string& key_type, const std::string& fingerprint,
                           const std::string& known_hosts_file, const std::string& known_key = "",
                           bool published = false);

}  // namespace podrun
