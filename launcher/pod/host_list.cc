// Parsing of --hosts values and host files.
#include "launcher/pod/host_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "launcher/error.h"

namespace podrun {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

int ParsePort(const std::string& text, const std::string& entry) {
  int port = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || p != text.data() + text.size() || port < 1 || port > 65535) {
    throw UsageError(fmt::format("bad port '{}' in host '{}'", text, entry));
  }
  return port;
}

}  // namespace

std::string HostSpec::ToString() const {
  std::string out;
  if (user) out += *user + "@";
  bool v6 = host.find(':') != std::string::npos;
  out += (v6 && port) ? "[" + host + "]" : host;
  if (port) out += ":" + std::to_string(*port);
  return out;
}

HostSpec ParseHostSpec(const std::string& raw) {
  std::string text = Trim(raw);
  HostSpec spec;
  std::string rest = text;
  if (size_t at = rest.rfind('@'); at != std::string::npos) {
    spec.user = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (spec.user->empty()) throw UsageError(fmt::format("empty user in host '{}'", text));
  }
  if (!rest.empty() && rest[0] == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos) throw UsageError(fmt::format("missing ']' in host '{}'", text));
    spec.host = rest.substr(1, close - 1);
    std::string tail = rest.substr(close + 1);
    if (!tail.empty()) {
      if (tail[0] != ':') throw UsageError(fmt::format("bad host '{}'", text));
      spec.port = ParsePort(tail.substr(1), text);
    }
  } else if (std::count(rest.begin(), rest.end(), ':') == 1) {
    size_t colon = rest.find(':');
    spec.host = rest.substr(0, colon);
    spec.port = ParsePort(rest.substr(colon + 1), text);
  } else {
    spec.host = rest;  // a name, an IPv4 address, or a bare IPv6 address
  }
  if (spec.host.empty()) throw UsageError(fmt::format("empty host in '{}'", text));
  if (spec.host.find_first_of(" \t,") != std::string::npos) {
    throw UsageError(fmt::format("bad host '{}'", text));
  }
  return spec;
}

std::vector<HostSpec> ParseHostLines(const std::string& text, const std::string& origin) {
  std::vector<HostSpec> hosts;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    line = Trim(line);
    if (line.empty()) continue;
    try {
      hosts.push_back(ParseHostSpec(line));
    } catch (const Error& e) {
      throw e.WithContext(fmt::format("{}:{}", origin, number));
    }
  }
  return hosts;
}

std::vector<HostSpec> ParseHostList(const std::string& value) {
  std::vector<HostSpec> hosts;
  if (!value.empty() && value[0] == '@') {
    std::string path = value.substr(1);
    std::ifstream file(path);
    if (!file) throw UsageError(fmt::format("cannot read host file '{}'", path));
    std::stringstream text;
    text << file.rdbuf();
    hosts = ParseHostLines(text.str(), path);
    if (hosts.empty()) throw UsageError(fmt::format("host file '{}' lists no host", path));
    return hosts;
  }
  std::stringstream in(value);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    if (Trim(entry).empty()) continue;
    hosts.push_back(ParseHostSpec(entry));
  }
  if (hosts.empty()) throw UsageError("--hosts lists no host");
  return hosts;
}

}  // namespace podrun
