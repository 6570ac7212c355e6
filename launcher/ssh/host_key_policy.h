// What to do with a server's host key, given what known_hosts says (CONTRACT.md: unknown keys
// are recorded unless --strict-host-keys; a changed key is always refused).
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

// The user-facing reason for a refusal, naming host, key type and SHA256 fingerprint, and
// what to do about it.
std::string HostKeyRefusal(HostKeyAction action, const std::string& host,
                           const std::string& key_type, const std::string& fingerprint,
                           const std::string& known_hosts_file);

}  // namespace podrun
