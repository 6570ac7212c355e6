// The per-job supervisor (docs/design.md decision 10): `podrun-agent supervise`, one process per
// job attempt, started by the agent at Prepare, in a session of its own. It owns the job's process
// and pipes, writes the sequenced log (log_writer.h), records the exit status (fsync'd, renamed
// into place) and exits with the job, so the job never depends on the agent: an agent that
// crashes, is killed or is replaced leaves the job running, and any later agent reads its files.
//
// The agent hands it, on fd 3 (a socket), the plan: length-prefixed strings (workdir, run, the
// spec's progress pattern, then "KEY=VALUE" entries of the job's environment, which holds secrets
// and is never written anywhere), ended by the agent's shutdown(SHUT_WR); and on fd 4 the child's
// end of the go socket (prepared_child.h). It answers on fd 3, then serves requests on a unix
// socket, SupervisorSocketPath(home, pid), from its own user only: the grammar of both is
// supervisor_control.h.
// It ignores SIGHUP, SIGINT, SIGTERM and SIGPIPE: it ends with its job, or by SIGKILL.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace podrun::agent {

struct SuperviseArgs {
  std::filesystem::path home;  // the agent's directory
  std::string job_id;
  uint32_t attempt = 0;
};

// The supervisor's main; returns its exit code (0 once the job's outcome is recorded).
int Supervise(const SuperviseArgs& args);

// Where the supervisor with process id `pid` listens.
std::filesystem::path SupervisorSocketPath(const std::filesystem::path& home, pid_t pid);

}  // namespace podrun::agent
