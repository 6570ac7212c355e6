// Parsing jump chains (see jump_spec.h).
#include "launcher/ssh/jump_spec.h"

#include <fmt/format.h>
#include <strings.h>

#include <sstream>

#include "launcher/base/error.h"

namespace podrun {
namespace {

std::vector<std::string> SplitWords(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

JumpChain ParseJumpChain(const std::string& value) {
  if (::strcasecmp(value.c_str(), "none") == 0) return {};
  if (value.empty()) throw UsageError("empty jump host");
  JumpChain chain;
  size_t start = 0;
  for (;;) {
    size_t comma = value.find(',', start);
    std::string entry = value.substr(start, comma == std::string::npos ? comma : comma - start);
    if (entry.empty()) throw UsageError(fmt::format("empty jump host in '{}'", value));
    try {
      chain.push_back(ParseHostSpec(entry));
    } catch (const Error& e) {
      throw UsageError(fmt::format("jump host: {}", e.what()));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return chain;
}

std::string JumpChainToString(const JumpChain& chain) {
  if (chain.empty()) return "none";
  std::string out;
  for (const HostSpec& hop : chain) {
    if (!out.empty()) out += ',';
    out += hop.ToString();
  }
  return out;
}

std::optional<JumpChain> JumpChainOfProxyCommand(const std::string& proxy_command) {
  std::vector<std::string> words = SplitWords(proxy_command);
  if (words.size() < 4 || words[0] != "ssh") return std::nullopt;
  std::optional<std::string> user, port, rest;
  size_t i = 1;
  auto flag = [&](const char* name, std::optional<std::string>& into) {
    if (i + 1 < words.size() && words[i] == name) {
      into = words[i + 1];
      i += 2;
    }
  };
  flag("-l", user);
  flag("-p", port);
  flag("-J", rest);
  if (i + 3 != words.size() || words[i] != "-W" || words[i + 1] != "'[%h]:%p'") {
    return std::nullopt;
  }
  HostSpec first;
  try {
    // The host as libssh took it apart ("[::1]" when it had brackets).
    std::string host = words[i + 2];
    if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
    first = ParseHostSpec(host + (port ? ":" + *port : ""));
    if (user) {
      ValidateUser(*user, proxy_command);
      first.user = *user;
    }
  } catch (const Error& e) {
    throw UsageError(fmt::format("ProxyJump: {}", e.what()));
  }
  JumpChain chain{first};
  if (rest) {
    JumpChain more = ParseJumpChain(*rest);
    chain.insert(chain.end(), more.begin(), more.end());
  }
  return chain;
}

}  // namespace podrun
