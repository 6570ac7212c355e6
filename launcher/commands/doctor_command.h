// `podrun doctor [POD OPTIONS] [--fix] [--json]` (docs/reference.md): per worker, whether it is
// reachable and authenticated, its agent's version, the accelerator devices and the processes
// holding them, a stale /tmp/libtpu_lockfile, free disk, the clock offset, and a TCMalloc
// LD_PRELOAD in the login environment; --fix ends the holders and removes a stale lockfile.
#pragma once

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/connect/pod.h"

namespace podrun {

struct DoctorRequest {
  Pod pod;
  bool fix = false;
  bool all_users = false;  // with fix: other users' holders too
  bool json = false;       // one JSON object per worker on stdout
};

// Prints one block per worker (stdout), or one JSON object per worker. Returns 3 if a worker
// could not be reached, 1 if a problem was found (and not fixed), else 0.
ExitCode RunDoctor(const DoctorRequest& request);

// `podrun doctor` in the command table (command.h): its options, registered on its app.
Command DoctorCommand();

}  // namespace podrun
