// RunCommand: run a shell command from a test and capture its exit code and output.
#pragma once

#include <string>

namespace podrun::testing {

// The outcome of a shell command: its exit code (128+N if killed by signal N) and its stdout.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` with /bin/sh -c and returns its exit code and stdout. With merge_stderr,
// stderr is captured too (the command is run as `{ command; } 2>&1`).
CommandResult RunCommand(const std::string& command, bool merge_stderr = true);

// Ends the --local agents that podrun started under `podrun_home` (they would otherwise idle
// on for minutes after a test).
void KillLocalAgents(const std::string& podrun_home);

// Quotes `s` for a POSIX shell (single quotes), so it reaches the command as one word.
std::string ShellQuote(const std::string& s);

}  // namespace podrun::testing
