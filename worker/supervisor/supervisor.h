// The per-job supervisor (docs/design.md decision 10): `podrun-agent supervise`, one process per job
// attempt, started by the agent at Prepare, in a session of its own. It owns the job's process
// and pipes, writes the sequenced log (log_writer.h), records the exit status (fsync'd, renamed
// into place) and exits with the job, so the job never depends on the agent: an agent that
// crashes, is killed or is replaced leaves the job running, and any later agent reads its files.
//
// The agent hands it, on fd 3 (a socket), the plan: length-prefixed strings (workdir, run,
// grace seconds, then "KEY=VALUE" entries of the job's environment, which holds secrets and is
// never written anywhere), ended by the agent's shutdown(SHUT_WR); and on fd 4 the child's end
// of the go socket (prepared_child.h). It answers on fd 3 with one line, "READY <job pid>" or
// "ERROR <reason>". It then serves requests on a unix socket, SupervisorSocketPath(home, pid):
// one line each, from its own user only:
//   "LOG <from_seq>"  → the records it holds in memory (not on disk) from from_seq on, encoded
//                       back to back as in the log file; then it closes the connection
//   "STOP <seconds>"  → "OK": SIGTERM to the job's group, SIGKILL after that grace period; a job
//                       not started yet ends without running once its go socket closes
//   "DISCARD"         → "OK": a prepared job that ends without starting records nothing (it was
//                       replaced by a new Prepare of the same attempt)
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
