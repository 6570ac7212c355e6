// Whether workers still accept a connection where SSH would reach them: a TCP probe
// (pod/tcp_probe.h) of the address and port that ssh_config and podrun's options give each one
// (HostName, Port, -p), and only of a direct route: a worker reached through jump hosts (-J,
// ProxyJump) or a ProxyCommand is not probed (kUnknown), since a probe from here would test
// another path than SSH's.
#pragma once

#include <chrono>
#include <vector>

#include "launcher/pod/host_list.h"
#include "launcher/pod/tcp_probe.h"
#include "launcher/ssh/ssh_options.h"

namespace podrun {

// One result per host, in order; all probed at once within `timeout`.
std::vector<ProbeResult> ProbeSshRoutes(const std::vector<HostSpec>& hosts,
                                        const SshOptions& options,
                                        std::chrono::milliseconds timeout);

}  // namespace podrun
