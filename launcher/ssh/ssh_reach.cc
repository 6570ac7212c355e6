// See ssh_reach.h.
#include "launcher/ssh/ssh_reach.h"

#include <map>
#include <string>

#include "launcher/base/error.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

std::vector<ProbeResult> ProbeSshRoutes(const std::vector<HostSpec>& hosts,
                                        const SshOptions& options,
                                        std::chrono::milliseconds timeout) {
  std::vector<ProbeResult> results(hosts.size(), ProbeResult::kUnknown);
  // The direct routes, by port: which result each probe fills.
  std::map<unsigned int, std::vector<std::pair<size_t, std::string>>> direct;
  for (size_t i = 0; i < hosts.size(); ++i) {
    UniqueSshSession session(ssh_new());
    if (!session) continue;
    try {
      const SshTarget target = ConfigureSession(session.get(), hosts[i], options);
      if (!target.jump.empty() || !target.proxy_command.empty()) continue;
      direct[target.port].emplace_back(i, target.address);
    } catch (const Error&) {  // ssh_config cannot be read: the connection will say so
    }
  }
  for (const auto& [port, targets] : direct) {
    std::vector<std::string> addresses;
    for (const auto& [index, address] : targets) addresses.push_back(address);
    const std::vector<ProbeResult> probed =
        ProbeTcp(addresses, static_cast<uint16_t>(port), timeout);
    for (size_t k = 0; k < targets.size(); ++k) results[targets[k].first] = probed[k];
  }
  return results;
}

}  // namespace podrun
