// PodWorker: one worker of a resolved pod, as the launcher reaches it and as the other workers
// reach it.
#pragma once

#include <string>

#include "launcher/pod/host_list.h"

namespace podrun {

struct PodWorker {
  int index = 0;  // pod-wide rank
  HostSpec host;  // as written (an ssh_config alias is resolved when connecting)
  // How the other workers reach this one (a discovered TPU VM's internal IP); empty: the
  // address the launcher connected to.
  std::string peer_address;
  int slice = 0;  // --tpu A,B,...: the node (0-based) this worker belongs to
};

}  // namespace podrun
