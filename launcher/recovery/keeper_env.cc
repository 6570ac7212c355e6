// See keeper_env.h.
#include "launcher/recovery/keeper_env.h"

#include <algorithm>
#include <string_view>

namespace podrun {

std::vector<std::string> KeeperEnvironment(const char* const* environ,
                                           const std::vector<std::string>& secret_names) {
  // The proxies reach gcloud (and ProxyCommand's programs) as they reach them in a shell; curl
  // and Python read both cases.
  static constexpr std::string_view kNames[] = {"HOME",        "PATH",        "SSH_AUTH_SOCK",
                                                "HTTPS_PROXY", "https_proxy", "HTTP_PROXY",
                                                "http_proxy",  "NO_PROXY",    "no_proxy"};
  static constexpr std::string_view kPrefixes[] = {"CLOUDSDK_", "PODRUN_"};
  std::vector<std::string> kept;
  for (const char* const* e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    const std::string_view name = entry.substr(0, eq);
    const bool keep =
        std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames) ||
        std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                    [&](std::string_view p) { return name.starts_with(p); }) ||
        std::find(secret_names.begin(), secret_names.end(), name) != secret_names.end();
    if (keep && !name.starts_with("PODRUN_PERSIST")) kept.emplace_back(entry);
  }
  // A keeper lives for days: it holds its own connections, not the connection holder's (one
  // process fewer between it and its workers, and a holder never kept alive by a run).
  if (environ != nullptr) kept.emplace_back("PODRUN_PERSIST=0");
  return kept;
}

}  // namespace podrun
