// Parsing of --hosts values and host files.
#include "launcher/pod/host_list.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "launcher/base/error.h"

namespace podrun {
namespace {

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

constexpr size_t kMaxNameLength = 255;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// How a character at fault is shown: quoted when printable, else by its code.
std::string ShowChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (c == ' ') return "a space";
  if (u < 0x20 || u >= 0x7f) return fmt::format("the byte 0x{:02x}", u);
  return fmt::format("'{}'", c);
}

// Throws for `value` (a "host" or "user" of `entry`) failing at `bad`.
[[noreturn]] void BadName(const char* what, const std::string& value, const std::string& entry,
                          const std::string& why) {
  if (value == entry) throw UsageError(fmt::format("bad {} '{}': {}", what, value, why));
  throw UsageError(fmt::format("bad {} '{}' in '{}': {}", what, value, entry, why));
}

void CheckLength(const char* what, const std::string& value, const std::string& entry) {
  if (value.empty()) throw UsageError(fmt::format("empty {} in '{}'", what, entry));
  if (value.size() > kMaxNameLength) {
    BadName(what, value.substr(0, 32) + "...", entry,
            fmt::format("longer than {} characters", kMaxNameLength));
  }
  if (value[0] == '-') BadName(what, value, entry, "must not start with '-'");
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

void ValidateHost(const std::string& host, const std::string& entry) {
  CheckLength("host", host, entry);
  if (host.find(':') != std::string::npos) {  // IPv6, maybe with a %zone
    size_t zone = host.find('%');
    for (size_t i = 0; i < host.size(); ++i) {
      char c = host[i];
      bool ok = i < zone ? (IsHexDigit(c) || c == ':' || c == '.') : (i == zone || IsNameChar(c));
      if (!ok) {
        BadName("host", host, entry,
                fmt::format("{} is not allowed in an IPv6 address", ShowChar(c)));
      }
    }
    return;
  }
  for (char c : host) {
    if (!IsNameChar(c)) {
      BadName("host", host, entry,
              fmt::format("{} is not allowed (a host is letters, digits, '.', '-', '_', or an "
                          "IPv6 address)",
                          ShowChar(c)));
    }
  }
}

void ValidateUser(const std::string& user, const std::string& entry) {
  CheckLength("user", user, entry);
  for (char c : user) {
    if (!IsNameChar(c)) {
      BadName(
          "user", user, entry,
          fmt::format("{} is not allowed (a user is letters, digits, '.', '-', '_')", ShowChar(c)));
    }
  }
}

std::string HostSpec::ToString() const {
  std::string out;
  if (user) out += *user + "@";
  // Brackets when a port follows, and when the host has a single ':' that would read as one.
  const auto colons = std::count(host.begin(), host.end(), ':');
  out += (colons > 0 && (port || colons == 1)) ? "[" + host + "]" : host;
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
  if (spec.user) ValidateUser(*spec.user, text);
  ValidateHost(spec.host, text);
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
    } catch (Error& e) {
      e.AddContext(fmt::format("{}:{}", origin, number));
      throw;
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
