// The job's prepared process (see prepared_child.h).
#include "worker/supervisor/prepared_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/private_state.h"

namespace podrun::agent {
namespace {

void SendReport(int fd, ChildStep step, int err) {
  const ChildReport report{step, err};
  (void)!::write(fd, &report, sizeof report);  // 8 bytes into an empty socket/pipe: not split
}

[[noreturn]] void ChildFailed(const ChildPlan& plan, ChildStep step) {
  const int err = errno;
  SendReport(plan.sock, step, err);
  SendReport(plan.ran, step, err);
  ::_exit(127);  // as a shell's "cannot execute"
}

// Closes every descriptor from 3 up but `keep_a` and `keep_b` (both >= 3, keep_a < keep_b).
void CloseFdsExcept(int keep_a, int keep_b) {
  const unsigned a = static_cast<unsigned>(keep_a), b = static_cast<unsigned>(keep_b);
  if ((a == 3 || ::close_range(3, a - 1, 0) == 0) &&
      (b == a + 1 || ::close_range(a + 1, b - 1, 0) == 0) && ::close_range(b + 1, ~0u, 0) == 0) {
    return;
  }
  rlimit limit{};  // no close_range (Linux < 5.9)
  int max_fd = 1 << 16;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < static_cast<rlim_t>(max_fd)) {
    max_fd = static_cast<int>(limit.rlim_cur);
  }
  for (int fd = 3; fd < max_fd; ++fd) {
    if (fd != keep_a && fd != keep_b) ::close(fd);
  }
}

// `report`'s bytes as printf escapes (\ooo), in this host's byte order.
std::string PrintfBytes(const ChildReport& report) {
  unsigned char bytes[sizeof report];
  std::memcpy(bytes, &report, sizeof report);
  std::string out;
  for (const unsigned char b : bytes) {
    out += '\\';
    out += static_cast<char>('0' + ((b >> 6) & 7));
    out += static_cast<char>('0' + ((b >> 3) & 7));
    out += static_cast<char>('0' + (b & 7));
  }
  return out;
}

}  // namespace

std::string ShellPreamble(int go, int ran) {
  const std::string g = std::to_string(go), r = std::to_string(ran);
  // A read timed out (a profile's TMOUT, often readonly) returns more than 128: read again.
  return "\\builtin printf '" + PrintfBytes({kReady, 0}) + "' >&" + g +
         "; until \\builtin read -r -N 1 -u " + g +
         " _; do \\builtin test $? -gt 128 || { \\builtin printf '" +
         PrintfBytes({kNotStarted, 0}) + "' >&" + r + "; \\builtin exit 0; }; done; \\exec " + g +
         "<&- " + r + ">&-";
}

std::string WithoutShellPreamble(std::string_view cmdline) {
  static constexpr std::string_view kMark("-lc\0\\builtin printf '", 21);
  const size_t at = cmdline.find(kMark);
  const size_t end = at == std::string_view::npos ? at : cmdline.find('\n', at);
  if (end == std::string_view::npos) return std::string(cmdline);
  return std::string(cmdline.substr(0, at + 4)) + std::string(cmdline.substr(end + 1));
}

[[noreturn]] void RunPreparedChild(const ChildPlan& plan) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some
  if (::setsid() < 0) ChildFailed(plan, kSession);
  if (::dup2(plan.devnull, STDIN_FILENO) < 0 || ::dup2(plan.out, STDOUT_FILENO) < 0 ||
      ::dup2(plan.err, STDERR_FILENO) < 0) {
    ChildFailed(plan, kStdio);
  }
  // Nothing of the supervisor's stays open here.
  CloseFdsExcept(std::min(plan.sock, plan.ran), std::max(plan.sock, plan.ran));
  // Both stay open in the shell, which reports on them and closes them (ShellPreamble).
  if (::fcntl(plan.sock, F_SETFD, 0) != 0 || ::fcntl(plan.ran, F_SETFD, 0) != 0) {
    ChildFailed(plan, kStdio);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::chdir(plan.workdir) != 0) ChildFailed(plan, kChdir);
  ::umask(InheritedUmask());  // the supervisor runs with 077; the job with its login umask
  ::execve(kShell, plan.argv, plan.envp);
  ChildFailed(plan, kExec);
}

bool ReadReport(int fd, ChildReport* report) {
  auto* bytes = reinterpret_cast<char*>(report);
  size_t have = 0;
  while (have < sizeof *report) {
    const ssize_t got = ::read(fd, bytes + have, sizeof *report - have);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    have += static_cast<size_t>(got);
  }
  return true;
}

std::string DescribeReport(const ChildReport& report) {
  const char* step = "?";
  switch (report.step) {
    case kReady:
      step = "ready";
      break;
    case kSession:
      step = "setsid";
      break;
    case kStdio:
      step = "stdio";
      break;
    case kChdir:
      step = "chdir";
      break;
    case kExec:
      step = "exec";
      break;
    case kNotStarted:
      return "never started";
  }
  return std::string(step) + ": " + std::strerror(report.err);
}

}  // namespace podrun::agent
