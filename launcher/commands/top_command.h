// `podrun top [JOB] [--once] [--json]`: a live view of a job's latest attempt, a row per worker
// (state, CPU, memory, accelerators in use, output rate, seconds silent, last line), failed and
// silent workers first, refreshed every second (docs/reference.md).
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct TopRequest {
  std::string job;    // id, unique prefix or name; empty: the latest job
  bool once = false;  // one snapshot (two samples half a second apart, for the rates), then exit
  bool json = false;  // one JSON object per worker and line instead of the table
};

// On a terminal: a full-screen table redrawn in place every second until Ctrl-C (then 0);
// elsewhere, a plain snapshot per second. Workers whose agent cannot be asked get a row in
// state "unreachable" with the error. With `once`: returns 3 if a worker was unreachable, else
// 0. Throws Error(kUsage) for an unknown job or when there is none. The store is only read.
ExitCode RunTop(const TopRequest& request);

// `podrun top` in the command table (command.h): its options, registered on its app.
Command TopCommand();

}  // namespace podrun
