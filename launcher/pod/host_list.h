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
// Throws Error(kUsage) naming the entry on an empty host or a bad port.
HostSpec ParseHostSpec(const std::string& text);

// Parses the value of --hosts: a comma-separated list, or "@FILE" (one entry per line,
// `#` comments and blank lines ignored). Throws Error(kUsage) with FILE:LINE for bad entries,
// an unreadable file, or an empty list.
std::vector<HostSpec> ParseHostList(const std::string& value);

// Parses the lines of a host file; `origin` names it in errors.
std::vector<HostSpec> ParseHostLines(const std::string& text, const std::string& origin);

}  // namespace podrun
