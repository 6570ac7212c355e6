// Taking stacks with py-spy or gdb, in parallel and bounded (see stack_dump.h).
#include "worker/job/stack_dump.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <thread>

#include "proto/spawn.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/job/trusted_program.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// After the deadline: how long the tools have between SIGTERM and SIGKILL, and then how long
// their reaping is waited for before a thread of its own takes it over.
constexpr milliseconds kTermGrace{1000};
constexpr milliseconds kReapGrace{1000};
constexpr size_t kStderrMaxBytes = 4u << 10;
constexpr size_t kErrorMaxBytes = 300;

std::string BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

bool IsShell(const std::string& command) {
  static const char* const kShells[] = {"sh",   "bash", "dash", "zsh", "ksh",
                                        "mksh", "fish", "tcsh", "csh", "busybox"};
  return std::find(std::begin(kShells), std::end(kShells), command) != std::end(kShells);
}

bool IsPython(const ProcessProbe& p) {
  const std::string argv0 = BaseName(p.cmdline.substr(0, p.cmdline.find(' ')));
  return p.command.starts_with("python") || argv0.starts_with("python");
}

// The last two non-empty lines of a tool's stderr, for an error message.
std::string Summary(const std::string& err) {
  std::vector<std::string_view> lines;
  std::string_view rest = err;
  while (!rest.empty()) {
    const size_t eol = rest.find('\n');
    std::string_view line = rest.substr(0, eol);
    rest = eol == std::string_view::npos ? std::string_view() : rest.substr(eol + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) lines.push_back(line);
  }
  std::string text;
  for (size_t i = lines.size() > 2 ? lines.size() - 2 : 0; i < lines.size(); ++i) {
    if (!text.empty()) text += "; ";
    text += lines[i];
  }
  return Utf8Text(text, kErrorMaxBytes);
}

// One tool running for one process.
struct Run {
  size_t index = 0;   // into the processes
  std::string tool;   // "py-spy" or "gdb"
  std::string shown;  // how errors name the command ("sudo -n gdb")
  pid_t pid = -1;
  UniqueFd out, err;
  std::string out_text, err_text;
  bool exited = false;
  bool status_known = false;
  int status = 0;
  bool timed_out = false;
};

// Reads what is there (non-blocking) into `text` up to `cap`, dropping the rest; closes `fd`
// at its end.
void Drain(UniqueFd* fd, std::string* text, size_t cap) {
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd->get(), buf, sizeof buf);
    if (n > 0) {
      text->append(buf, std::min(static_cast<size_t>(n), cap - std::min(cap, text->size())));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    fd->reset();  // end of output or an error
    return;
  }
}

// Notes whether `run` has exited; once it has, what is left of its group is killed (its pid,
// not reaped yet, still names the group) and it is reaped.
void CheckExit(Run* run) {
  if (run->exited) return;
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(run->pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == ECHILD) run->exited = true;  // reaped unseen (SIGCHLD ignored): status unknown
    return;
  }
  if (info.si_pid != run->pid) return;
  ::kill(-run->pid, SIGKILL);
  int status = 0;
  while (::waitpid(run->pid, &status, 0) < 0 && errno == EINTR) {
  }
  run->exited = true;
  run->status_known = true;
  run->status = status;
}

bool Done(const Run& run) { return run.exited && !run.out && !run.err; }

// Reads the tools' output and notes their exits until all are done or `until`.
void Pump(std::vector<Run>* runs, Clock::time_point until) {
  for (;;) {
    std::vector<pollfd> fds;
    for (Run& run : *runs) {
      CheckExit(&run);
      if (run.out) fds.push_back({run.out.get(), POLLIN, 0});
      if (run.err) fds.push_back({run.err.get(), POLLIN, 0});
    }
    const bool all_done = std::all_of(runs->begin(), runs->end(), Done);
    const auto now = Clock::now();
    if (all_done || now >= until) return;
    const auto left = std::chrono::duration_cast<milliseconds>(until - now).count();
    // Exits are not signalled on a descriptor: look again at least every 20 ms.
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(left, 1, 20)));
    for (Run& run : *runs) {
      if (run.out) Drain(&run.out, &run.out_text, kStackMaxBytes);
      if (run.err) Drain(&run.err, &run.err_text, kStderrMaxBytes);
    }
  }
}

void SignalUnfinished(std::vector<Run>* runs, int sig) {
  for (Run& run : *runs) {
    if (!run.exited) ::kill(-run.pid, sig);
  }
}

// Starts `argv` in a group of its own with its output on pipes; the error as text if it fails.
std::string Start(const std::vector<std::string>& argv, Run* run) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return ErrnoMessage("pipe");
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) return ErrnoMessage("pipe");
  UniqueFd err_r(err[0]), err_w(err[1]);
  for (int fd : {out_r.get(), err_r.get()}) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  try {
    run->pid = SpawnProcess({.argv = argv,
                             .fds = {{STDIN_FILENO, kSpawnDevNull},
                                     {STDOUT_FILENO, out_w.get()},
                                     {STDERR_FILENO, err_w.get()}},
                             .group = SpawnGroup::kNewGroup,
                             .cwd = "/"});
  } catch (const SpawnError& e) {
    return e.what();
  }
  run->out = std::move(out_r);
  run->err = std::move(err_r);
  return "";
}

// What `run` gave its process. The process is looked at again once the tool is done: a pid that
// names another process now (the one asked for ended, its pid was reused) drops the output.
void Report(Run& run, milliseconds timeout, ProcessProbe* p) {
  const bool printed = run.out_text.find_first_not_of(" \t\r\n") != std::string::npos;
  const std::optional<ProcStat> now = ReadProcStat(p->pid);
  if (printed &&
      (!now || now->start_ticks != p->start_ticks || now->state == 'Z' || now->state == 'X')) {
    p->stack_error = "pid " + std::to_string(p->pid) +
                     " ended while its stack was taken (or is another process now): the stack "
                     "was dropped";
    return;
  }
  if (run.timed_out) {
    p->stack_error = run.shown + " timed out after " + std::to_string(timeout.count()) + " ms";
  } else if (run.status_known && run.status != 0) {
    const std::string how = WIFEXITED(run.status)
                                ? "exit status " + std::to_string(WEXITSTATUS(run.status))
                                : "killed by " + SignalName(WTERMSIG(run.status));
    const std::string said = Summary(run.err_text);
    p->stack_error = run.shown + " failed (" + how + ")" + (said.empty() ? "" : ": " + said);
  } else if (!printed || (run.tool == "gdb" && run.out_text.find("#0") == std::string::npos)) {
    const std::string said = Summary(run.err_text);
    p->stack_error = run.shown + " printed no stack" + (said.empty() ? "" : ": " + said);
  }
  if (printed) {
    p->stack_tool = run.tool;
    p->stack = std::move(run.out_text);
  }
}

}  // namespace

StackTools FindStackTools(const StackOptions& options) {
  const std::vector<std::string> dirs =
      options.search_dirs.empty() ? ProgramSearchDirs() : options.search_dirs;
  StackTools tools;
  tools.py_spy = FindTrustedProgram(dirs, "py-spy");
  tools.gdb = FindTrustedProgram(dirs, "gdb");
  tools.use_sudo = options.use_sudo.value_or(TracingNeedsSudo());
  if (tools.use_sudo) {
    tools.sudo = FindTrustedProgram(dirs, "sudo");
    tools.timeout = FindTrustedProgram(dirs, "timeout");
    if (tools.sudo.empty()) tools.use_sudo = false;  // the tool's own error then says why
  }
  return tools;
}

std::vector<std::string> StackCommand(const StackTools& tools, const std::string& tool, pid_t pid,
                                      milliseconds bound) {
  std::vector<std::string> argv;
  if (tools.use_sudo) {
    argv = {tools.sudo, "-n"};
    if (!tools.timeout.empty()) {
      // sudo's tool runs as root, out of the agent's reach: it bounds itself (TERM, on which gdb
      // detaches, then KILL a second later).
      const auto seconds = std::max<int64_t>(1, (bound.count() + 999) / 1000);
      argv.insert(argv.end(), {tools.timeout, "-k", "1", std::to_string(seconds)});
    }
  }
  if (tool == tools.py_spy) {
    argv.insert(argv.end(), {tool, "dump", "--pid", std::to_string(pid)});
  } else {
    // No argument values in the stack (they may hold a program's data, its secrets): only
    // whether a frame has arguments ("presence", gdb 10 and later); an older gdb refuses that
    // setting and keeps "none" from the line before. No script the process's files name is
    // loaded (auto-load: a job's libraries would run code in a root gdb).
    argv.insert(
        argv.end(),
        {tool, "-p", std::to_string(pid), "-batch", "-nx", "-q", "-iex", "set auto-load off",
         "-iex", "set debuginfod enabled off", "-iex", "set print frame-arguments none", "-iex",
         "set print frame-arguments presence", "-ex", "thread apply all bt 32"});
  }
  return argv;
}

std::vector<size_t> ChooseStackTargets(const std::vector<ProcessProbe>& processes) {
  std::vector<size_t> chosen;
  for (bool shells : {false, true}) {
    for (size_t i = 0; i < processes.size() && chosen.size() < kMaxStacksPerWorker; ++i) {
      const ProcessProbe& p = processes[i];
      if (!p.IsZombie() && IsShell(p.command) == shells) chosen.push_back(i);
    }
  }
  return chosen;
}

void DumpStacks(std::vector<ProcessProbe>* processes, const StackOptions& options,
                std::string* note) {
  const auto begin = Clock::now();
  const std::vector<size_t> chosen = ChooseStackTargets(*processes);
  for (size_t i = 0; i < processes->size(); ++i) {
    ProcessProbe& p = (*processes)[i];
    if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
    p.stack_error = p.IsZombie() ? "a zombie has no stack"
                                 : "not taken: at most " + std::to_string(kMaxStacksPerWorker) +
                                       " stacks per worker";
  }
  const StackTools tools = FindStackTools(options);
  if (tools.py_spy.empty() && tools.gdb.empty()) {
    *note = "no py-spy or gdb in a directory only root can write: no stacks";
    return;
  }
  std::vector<Run> runs;
  runs.reserve(chosen.size());
  for (size_t i : chosen) {
    ProcessProbe& p = (*processes)[i];
    const bool py_spy = !tools.py_spy.empty() && (IsPython(p) || tools.gdb.empty());
    Run run;
    run.index = i;
    run.tool = py_spy ? "py-spy" : "gdb";
    run.shown = (tools.use_sudo ? "sudo -n " : "") + run.tool;
    const std::string error =
        Start(StackCommand(tools, py_spy ? tools.py_spy : tools.gdb, p.pid, options.timeout), &run);
    if (!error.empty()) {
      p.stack_error = Utf8Text(error, kErrorMaxBytes);
      continue;
    }
    runs.push_back(std::move(run));
  }
  Pump(&runs, begin + options.timeout);
  for (Run& run : runs) run.timed_out = !run.exited;
  if (std::any_of(runs.begin(), runs.end(), [](const Run& r) { return !r.exited; })) {
    SignalUnfinished(&runs, SIGTERM);
    Pump(&runs, Clock::now() + kTermGrace);
    SignalUnfinished(&runs, SIGKILL);
    Pump(&runs, Clock::now() + kReapGrace);
  }
  for (Run& run : runs) {
    if (!run.exited) {  // out of reach (a root tool under sudo): reaped whenever it ends
      std::thread([pid = run.pid] {
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      }).detach();
    }
    Report(run, options.timeout, &(*processes)[run.index]);
  }
}

}  // namespace podrun::agent
