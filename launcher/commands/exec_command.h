// `podrun exec`: runs a command through the login shell on every selected worker, streaming
// labelled output (docs/reference.md). Needs no agent.
#pragma once

#include <string>
#include <vector>

#include "launcher/commands/command.h"
#include "launcher/commands/outcome.h"
#include "launcher/connect/pod.h"

namespace podrun {

struct ExecRequest {
  Pod pod;
  std::vector<std::string> command;  // joined with spaces, as ssh does
  bool json = false;                 // one JSON object per worker at the end
  bool fold = false;  // each distinct line once, labelled with its workers' ranges (clush -b)
  // Through the connection holder (persist/): off with --no-persist or PODRUN_PERSIST=0.
  bool persist = false;
};

// Runs the request to the end and returns the contract's exit code. Prints output and
// podrun's own messages (to stderr).
ExitCode RunExec(const ExecRequest& request);

// The command line sent to the server: `command` run by the user's login shell.
std::string LoginShellCommand(const std::string& command);

// `podrun exec` in the command table (command.h): its options, registered on its app.
Command ExecCommand();

}  // namespace podrun
