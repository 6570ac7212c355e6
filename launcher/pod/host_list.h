// Host lists of the contract: `--hosts H1,H2,...` or `--hosts @FILE`, entries `[user@]host[:port]`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace podrun {

// One worker's address as the user wrote it. `host` may be an ssh_config alias.
struct HostSpec {
  std::optional<std::string> user;
  std::string host;
  std::optional<int> port;

  // "[user@]host[:port]" again, as written.
  std::string ToString() const;
  bool operator==(const HostSpec&) const = default;
};

// Parses "[user@]host[:port]"; an IPv6 address with a port is written "[::1]:22".
// Throws Error(kUsage) naming the entry on an empty or bad host or user (ValidateHost,
// ValidateUser) or a bad port (not a number in 1..65535).
HostSpec ParseHostSpec(const std::string& text);

// Hosts and users reach libssh, ssh_config's Host matching and the ProxyJump command that
// OpenSSH's ssh runs through a shell: nothing in them may read as an option or a shell word.
// A host is a name or an IPv4 address (letters, digits, '.', '-', '_'; not starting with '-')
// or an IPv6 address (hex digits, ':', '.', and a "%zone" of the name characters). A user is
// letters, digits, '.', '-', '_' (not starting with '-'). Both: 1 to 255 characters. Throw
// Error(kUsage) naming the value and the character at fault; `entry` is the text it came from.
void ValidateHost(const std::string& host, const std::string& entry);
void ValidateUser(const std::string& user, const std::string& entry);

// Parses the value of --hosts: a comma-separated list, or "@FILE" (one entry per line,
// `#` comments and blank lines ignored). Throws Error(kUsage) with FILE:LINE for bad entries,
// an unreadable file, or an empty list.
std::vector<HostSpec> ParseHostList(const std::string& value);

// Parses the lines of a host file; `origin` names it in errors.
std::vector<HostSpec> ParseHostLines(const std::string& text, const std::string& origin);

}  // namespace podrun
