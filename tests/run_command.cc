// RunCommand: run a shell command from a test and capture its exit code and output.
#include "tests/run_command.h"

#include <sys/wait.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace podrun::testing {

CommandResult RunCommand(const std::string& command, bool merge_stderr) {
  // The braces keep redirections inside `command` separate from ours; stdin is /dev/null so
  // that nothing started here reads the test's terminal.
  std::string full = "{ " + command + "\n} </dev/null";
  if (merge_stderr) full += " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) {
    throw std::runtime_error("popen(" + command + "): " + std::strerror(errno));
  }
  CommandResult result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  int status = ::pclose(pipe);
  if (status == -1) {
    result.exit_code = -1;
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

std::string ShellQuote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += "'";
  return quoted;
}

void KillLocalAgents(const std::string& podrun_home) {
  RunCommand("pkill -f -- '[s]erve --home " + podrun_home + "/local/' || true");
}

}  // namespace podrun::testing
