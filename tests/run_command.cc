// RunCommand: run a shell command from a test and capture its exit code and output.
#include "tests/run_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

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

pid_t StartCommand(const std::string& command) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

std::string ReadTextFile(const std::string& path) {
  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  return text.str();
}

std::string WaitForText(const std::string& path, const std::string& needle,
                        std::chrono::milliseconds timeout) {
  auto give_up = std::chrono::steady_clock::now() + timeout;
  std::string text = ReadTextFile(path);
  while (text.find(needle) == std::string::npos && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    text = ReadTextFile(path);
  }
  return text;
}

int CountProcesses(const std::string& marker) {
  // "[p]attern" matches the marker but not this shell's own command line.
  // (Appended, not "[" + ...: GCC 12 at -O3 reports a false -Wrestrict on that.)
  std::string pattern = std::string("[").append(1, marker[0]).append("]").append(marker, 1);
  return std::stoi(RunCommand("pgrep -fc -- '" + pattern + "' || true").output);
}

std::vector<pid_t> PodrunProcesses(const std::string& prefix, const std::string& podrun_home) {
  // A /proc file of NUL-separated strings, as its strings.
  auto strings = [](const std::filesystem::path& path) {
    std::vector<std::string> out;
    std::ifstream in(path, std::ios::binary);
    for (std::string s; std::getline(in, s, '\0');) out.push_back(s);
    return out;
  };
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string command;
    for (const std::string& arg : strings(entry.path() / "cmdline")) {
      command += (command.empty() ? "" : " ") + arg;
    }
    if (command.rfind(prefix, 0) != 0) continue;
    for (const std::string& variable : strings(entry.path() / "environ")) {
      if (variable == "PODRUN_HOME=" + podrun_home) {
        pids.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
    }
  }
  return pids;
}

bool WaitUntil(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return condition();
}

pid_t StartInOwnGroup(const std::string& command, const std::string& output) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // as the child does: whichever runs first
  return pid;
}

}  // namespace podrun::testing
