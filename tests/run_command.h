// RunCommand: run a shell command from a test and capture its exit code and output.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace podrun::testing {

// The outcome of a shell command: its exit code (128+N if killed by signal N) and its stdout.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

// Runs `command` with /bin/sh -c and returns its exit code and stdout. With merge_stderr,
// stderr is captured too (the command is run as `{ command; } 2>&1`).
CommandResult RunCommand(const std::string& command, bool merge_stderr = true);

// Starts `command` with /bin/sh in the background; the shell execs it, so the returned pid is
// the command's own (for kill() and waitpid()).
pid_t StartCommand(const std::string& command);

// Starts `command` (sh -c, exec'd) in a process group of its own, as a terminal's foreground job
// is, stdin /dev/null, stdout and stderr to the file `output`: kill(-pid, SIGINT) is then the
// terminal's Ctrl-C.
pid_t StartInOwnGroup(const std::string& command, const std::string& output);

// The whole content of the file at `path` ("" if it cannot be read).
std::string ReadTextFile(const std::string& path);

// Polls the file at `path` until it contains `needle` or `timeout` passes; returns its text.
std::string WaitForText(const std::string& path, const std::string& needle,
                        std::chrono::milliseconds timeout = std::chrono::seconds(30));

// Ends the --local agents that podrun started under `podrun_home` (they would otherwise idle
// on for minutes after a test).
void KillLocalAgents(const std::string& podrun_home);

// Processes anywhere on this machine whose command line contains `marker`: only for --local
// workers, with a marker unique to the test run (a test with a pod counts inside it:
// TestPod::CountProcesses).
int CountProcesses(const std::string& marker);

// This test's own podrun processes: those whose command line (its arguments joined by spaces)
// starts with `prefix` (e.g. "podrun watch JOB": a keeper) and whose environment sets
// PODRUN_HOME to `podrun_home`, never another test's or user's elsewhere on the machine.
std::vector<pid_t> PodrunProcesses(const std::string& prefix, const std::string& podrun_home);

// Polls `condition` every 100 ms until it holds or `limit` has passed; returns its last value.
bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds limit);

// Quotes `s` for a POSIX shell (single quotes), so it reaches the command as one word.
std::string ShellQuote(const std::string& s);

}  // namespace podrun::testing
