// Host key decisions.
#include "launcher/ssh/host_key_policy.h"

#include <fmt/format.h>

#include "launcher/base/error.h"
#include "launcher/ssh/ssh_options.h"

namespace podrun {

HostKeyAction DecideHostKey(ssh_known_hosts_e state, bool strict_host_keys) {
  switch (state) {
    case SSH_KNOWN_HOSTS_OK:
      return HostKeyAction::kAccept;
    case SSH_KNOWN_HOSTS_CHANGED:
    case SSH_KNOWN_HOSTS_OTHER:
      return HostKeyAction::kRefuseChanged;
    case SSH_KNOWN_HOSTS_UNKNOWN:
    case SSH_KNOWN_HOSTS_NOT_FOUND:
      return strict_host_keys ? HostKeyAction::kRefuseUnknown : HostKeyAction::kRecord;
    case SSH_KNOWN_HOSTS_ERROR:
      break;
  }
  return HostKeyAction::kError;
}

namespace {

// libssh expands %d, %u, %h... in file options when it connects: keep a literal '%' literal.
std::string EscapePercent(const std::string& path) {
  std::string out;
  for (char c : path) {
    out += c;
    if (c == '%') out += '%';
  }
  return out;
}

}  // namespace

void PinHostKeyOptions(ssh_session s, const std::string& known_hosts, const std::string& host) {
  std::string escaped = EscapePercent(known_hosts);
  SetSshOption(s, SSH_OPTIONS_KNOWNHOSTS, escaped.c_str(), "known_hosts file", host);
  SetSshOption(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, kSystemKnownHosts, "global known_hosts file",
               host);
  int strict = 1;  // libssh's own check, not --strict-host-keys: DecideHostKey decides
  SetSshOption(s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &strict, "StrictHostKeyChecking", host);
}

bool HostKeyOptionsPinned(ssh_session s, const std::string& known_hosts) {
  // Before libssh applies its options (at connect) the path is still escaped.
  std::string set = GetStringOption(s, SSH_OPTIONS_KNOWNHOSTS);
  return (set == known_hosts || set == EscapePercent(known_hosts)) &&
         GetStringOption(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS) == kSystemKnownHosts;
}

std::string HostKeyRefusal(HostKeyAction action, const std::string& host,
                           const std::string& key_type, const std::string& fingerprint,
                           const std::string& known_hosts_file, const std::string& known_key,
                           bool published) {
  switch (action) {
    case HostKeyAction::kRefuseChanged:
      if (published) {
        return fmt::format(
            "HOST KEY CHANGED for {}: {} pins {}, the key the VM at this address published "
            "through the cloud API, but the server now offers {} {}: the machine answering is "
            "not that VM; refusing to connect (the pin stays: check the address, the route to it "
            "(jump host, ProxyCommand) and the node in the cloud console)",
            host, known_hosts_file, known_key, key_type, fingerprint);
      }
      return fmt::format(
          "HOST KEY CHANGED for {}: {} {}, the server now offers {} {}; refusing to connect "
          "(if the host was really reinstalled, remove the old key: ssh-keygen -R {} -f {})",
          host, known_hosts_file, known_key.empty() ? "holds another key" : "pins " + known_key,
          key_type, fingerprint, host, known_hosts_file);
    case HostKeyAction::kRefuseUnknown:
      return fmt::format(
          "unknown host key for {}: {} {}; refusing because of --strict-host-keys "
          "(add the key to {} first)",
          host, key_type, fingerprint, known_hosts_file);
    case HostKeyAction::kError:
      return fmt::format("cannot read known hosts file {}", known_hosts_file);
    default:
      return "";
  }
}

}  // namespace podrun
