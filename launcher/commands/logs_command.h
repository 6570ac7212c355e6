// `podrun logs JOB`: the merged log of a job's latest attempt, read from the workers' agents
// (the authoritative copy), from any terminal (docs/reference.md).
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct LogsRequest {
  std::string job;      // id, unique id prefix, or name
  bool follow = false;  // -f: keep printing until every selected worker's process has ended
  std::string workers;  // -w LIST (pod-wide indexes); empty: every worker of the attempt
  bool fold = false;    // --fold: a line all selected workers printed alike, printed once
  bool prefix = true;   // false: --no-prefix
};

// Prints the log (worker lines to stdout/stderr, podrun's messages to stderr) and returns the
// exit code: 3 if a worker's agent could not be reached (the others are printed all the same);
// with follow, 1 if the process failed, was stopped or never started on a selected worker;
// else 0. Throws Error(kUsage) for an unknown job or a bad -w.
ExitCode RunLogs(const LogsRequest& request);

// `podrun logs` in the command table (command.h): its options, registered on its app.
Command LogsCommand();

}  // namespace podrun
