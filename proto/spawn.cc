// See spawn.h. fork (not posix_spawn) because a child may need a umask of its own, which
// posix_spawn cannot give; between fork and exec the child makes only async-signal-safe calls,
// and tells the parent what failed through a close-on-exec pipe (EOF there: exec succeeded).
#include "proto/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "proto/unique_fd.h"

extern char** environ;

namespace podrun {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";

// What the child failed at, as written to the error pipe.
enum class Step : int { kSession, kDevNull, kDup, kChdir, kExec };

struct ChildFailure {
  Step step;
  int error_number;
};

const char* StepName(Step step) {
  switch (step) {
    case Step::kSession:
      return "new session or process group";
    case Step::kDevNull:
      return "open /dev/null";
    case Step::kDup:
      return "set up its descriptors";
    case Step::kChdir:
      return "chdir";
    case Step::kExec:
      return "exec";
  }
  return "start";
}

std::string PathOf(const std::vector<std::string>& env) {
  for (const std::string& entry : env) {
    if (entry.starts_with("PATH=")) return entry.substr(5);
  }
  return kDefaultPath;
}

// The program's path: argv0 itself when it has a '/', else the first executable regular file
// named argv0 on `path`; empty when there is none.
std::string FindProgram(const std::string& argv0, const std::string& path) {
  if (argv0.find('/') != std::string::npos) return argv0;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(path.find(':', start), path.size());
    std::string dir = path.substr(start, end - start);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + argv0;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (end == path.size()) return "";
    start = end + 1;
  }
}

// The child, between fork and exec: async-signal-safe calls only. Never returns.
[[noreturn]] void RunChild(const SpawnRequest& request, const char* program, char* const* argv,
                           char* const* envp, int dev_null, int report_fd, int max_child) {
  auto fail = [report_fd](Step step) {
    const ChildFailure failure{step, errno};
    [[maybe_unused]] ssize_t n = ::write(report_fd, &failure, sizeof failure);
    ::_exit(127);
  };
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigemptyset(&defaults.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &defaults, nullptr);  // some refuse
  if (request.group == SpawnGroup::kNewSession && ::setsid() < 0) fail(Step::kSession);
  if (request.group == SpawnGroup::kNewGroup && ::setpgid(0, 0) != 0) fail(Step::kSession);
  if (request.umask) ::umask(*request.umask);
  // Each source first above every target, so that no dup2 overwrites a later source.
  int moved[64];
  const size_t count = std::min<size_t>(request.fds.size(), 64);
  for (size_t i = 0; i < count; ++i) {
    const int source = request.fds[i].parent == kSpawnDevNull ? dev_null : request.fds[i].parent;
    if (source < 0) fail(Step::kDevNull);
    moved[i] = ::fcntl(source, F_DUPFD_CLOEXEC, max_child + 1);
    if (moved[i] < 0) fail(Step::kDup);
  }
  for (size_t i = 0; i < count; ++i) {
    if (::dup2(moved[i], request.fds[i].child) < 0) fail(Step::kDup);
  }
  // Whatever else the caller's threads hold open (sockets, pipes) ends at exec.
  ::close_range(static_cast<unsigned>(max_child + 1), ~0U, CLOSE_RANGE_CLOEXEC);  // Linux 5.11+
  if (!request.cwd.empty() && ::chdir(request.cwd.c_str()) != 0) fail(Step::kChdir);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(program, argv, envp);
  fail(Step::kExec);
  ::_exit(127);
}

}  // namespace

pid_t SpawnProcess(const SpawnRequest& request) {
  const std::string name = request.argv.empty() ? std::string("(no program)") : request.argv[0];
  auto error = [&name](const std::string& what, int error_number, bool not_found = false) {
    return SpawnError("cannot run " + name + ": " + what, error_number, not_found);
  };
  if (request.argv.empty()) throw error("no program given", EINVAL);
  if (request.fds.size() > 64) throw error("more than 64 descriptors to give it", EINVAL);

  // Everything the child needs is made before the fork: it cannot allocate.
  std::vector<std::string> env_strings;
  if (request.env) {
    env_strings = *request.env;
  } else {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env_strings.emplace_back(*e);
  }
  const std::string program =
      request.program.empty() ? FindProgram(name, PathOf(env_strings)) : request.program;
  if (program.empty()) throw error("not found on PATH", ENOENT, true);
  std::vector<std::string> args = request.argv;
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The child's descriptors are numbered up to max_child; its sources are first moved above.
  int max_child = STDERR_FILENO;
  for (const SpawnFd& fd : request.fds) max_child = std::max(max_child, fd.child);
  UniqueFd dev_null;
  if (std::any_of(request.fds.begin(), request.fds.end(),
                  [](const SpawnFd& fd) { return fd.parent == kSpawnDevNull; })) {
    dev_null.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!dev_null) throw error("open /dev/null: " + std::string(std::strerror(errno)), errno);
  }
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    throw error("pipe: " + std::string(std::strerror(errno)), errno);
  }
  UniqueFd report_read(report[0]), report_write(report[1]);
  if (report_write.get() <= max_child) {  // it must outlive the child's dup2s
    report_write.reset(::fcntl(report_write.get(), F_DUPFD_CLOEXEC, max_child + 1));
    if (!report_write) throw error("fcntl: " + std::string(std::strerror(errno)), errno);
  }

  // No handler of the caller's may run in the child before its dispositions are reset.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  const int fork_errno = errno;
  if (pid == 0) {
    RunChild(request, program.c_str(), argv.data(), envp.data(), dev_null.get(), report_write.get(),
             max_child);
  }
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) throw error("fork: " + std::string(std::strerror(fork_errno)), fork_errno);
  report_write.reset();
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(report_read.get(), &failure, sizeof failure);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof failure)) return pid;  // EOF: it runs the program
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string what = StepName(failure.step);
  if (failure.step == Step::kChdir) what += " " + request.cwd;
  if (failure.step == Step::kExec) what += " " + program;
  throw error(what + ": " + std::strerror(failure.error_number), failure.error_number,
              failure.step == Step::kExec && failure.error_number == ENOENT);
}

}  // namespace podrun
