// Host key decisions.
#include "launcher/ssh/host_key_policy.h"

#include <fmt/format.h>

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

std::string HostKeyRefusal(HostKeyAction action, const std::string& host,
                           const std::string& key_type, const std::string& fingerprint,
                           const std::string& known_hosts_file) {
  switch (action) {
    case HostKeyAction::kRefuseChanged:
      return fmt::format(
          "HOST KEY CHANGED for {}: the server now offers {} {}; refusing to connect "
          "(if the host was really reinstalled, remove the old key: ssh-keygen -R {} -f {})",
          host, key_type, fingerprint, host, known_hosts_file);
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
