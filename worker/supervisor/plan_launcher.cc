// The job's start from its plan (see plan_launcher.h).
#include "worker/supervisor/plan_launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <string_view>

#include "worker/base/agent_error.h"
#include "worker/supervisor/plan_codec.h"
#include "worker/supervisor/prepared_child.h"

extern char** environ;

namespace podrun::agent {
namespace {

constexpr size_t kPipeBytes = 1u << 20;  // the job's stdout and stderr pipes
constexpr size_t kMaxPlanBytes = 64u << 20;

}  // namespace

void PlanLauncher::ReadPlan(int fd) {
  std::string bytes;
  char buf[64 << 10];
  while (true) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(ErrnoMessage("read plan"));
    if (got == 0) break;
    bytes.append(buf, static_cast<size_t>(got));
    if (bytes.size() > kMaxPlanBytes) throw std::runtime_error("plan too large");
  }
  std::vector<std::string> plan = DecodeStrings(bytes);
  ::explicit_bzero(bytes.data(), bytes.size());
  ::explicit_bzero(buf, sizeof buf);
  if (plan.size() < 3) throw std::runtime_error("malformed plan");
  workdir_ = plan[0];
  run_ = plan[1];
  progress_ = plan[2];
  env_.assign(std::make_move_iterator(plan.begin() + 3), std::make_move_iterator(plan.end()));
}

LaunchedJob PlanLauncher::Launch(int go_fd) {
  int out[2], err[2], ran[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(ran, O_CLOEXEC) != 0) {
    throw std::runtime_error(ErrnoMessage("pipe"));
  }
  // Bigger pipes than the 64 KiB default: a job that prints fast blocks less often, and each
  // read takes more (fewer records, wakeups and writes per byte). Refused above the system's
  // pipe-max-size: then the default stays.
  (void)::fcntl(out[0], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  (void)::fcntl(err[0], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  LaunchedJob job;
  job.out.reset(out[0]);
  job.err.reset(err[0]);
  job.ran.reset(ran[0]);
  UniqueFd out_w(out[1]), err_w(err[1]), ran_w(ran[1]);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw std::runtime_error(ErrnoMessage("/dev/null"));

  // The job's environment: the agent's own, overridden and extended by the job's.
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool overridden = std::any_of(env_.begin(), env_.end(), [&](const std::string& kv) {
      return std::string_view(kv).substr(0, kv.find('=')) == name;
    });
    if (!overridden) env_strings.emplace_back(entry);
  }
  for (auto& kv : env_) env_strings.push_back(kv);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string bash = kShell, flag = "-lc";
  // The shell waits for GO once its profile is read (prepared_child.h), then runs the run.
  std::string script = ShellPreamble(go_fd, ran_w.get()) + "\n" + run_;
  std::vector<char*> argv = {bash.data(), flag.data(), script.data(), nullptr};
  const ChildPlan plan{.sock = go_fd,
                       .ran = ran_w.get(),
                       .devnull = devnull.get(),
                       .out = out_w.get(),
                       .err = err_w.get(),
                       .workdir = workdir_.c_str(),
                       .argv = argv.data(),
                       .envp = envp.data()};
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) RunPreparedChild(plan);
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  for (auto& s : env_strings) ::explicit_bzero(s.data(), s.size());
  for (auto& s : env_) ::explicit_bzero(s.data(), s.size());
  env_.clear();
  ::close(go_fd);  // only the child (and the agent) hold the go socket now
  if (pid < 0) {
    errno = fork_errno;
    throw std::runtime_error(ErrnoMessage("fork"));
  }
  job.pid = pid;
  return job;
}

}  // namespace podrun::agent
