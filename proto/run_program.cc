// See run_program.h.
#include "proto/run_program.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "proto/interrupt_note.h"
#include "proto/spawn.h"
#include "proto/unique_fd.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;
// How often a wait looks for a noted Ctrl-C.
constexpr auto kInterruptPoll = std::chrono::milliseconds(50);
constexpr auto kReapPoll = std::chrono::milliseconds(10);

int ExitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// SIGTERM to `target` (pid, or -pid for its group), SIGKILL after the grace; returns the status
// it was reaped with.
int StopAndReap(pid_t pid, pid_t target) {
  ::kill(target, SIGTERM);
  const auto kill_at = Clock::now() + kInterruptedProgramGrace;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (Clock::now() >= kill_at) {
      ::kill(target, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    std::this_thread::sleep_for(kReapPoll);
  }
  return status;
}

}  // namespace

ProgramResult RunProgram(const std::vector<std::string>& args) {
  return RunProgramWithin(args, std::chrono::milliseconds::zero());
}

ProgramResult RunProgramWithin(const std::vector<std::string>& args,
                               std::chrono::milliseconds deadline) {
  ProgramResult result;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    result.err = std::strerror(errno);
    return result;
  }
  UniqueFd err_r(err[0]), err_w(err[1]);
  const uint64_t interrupts_at_start = InterruptCount();
  // Stopped by us on a noted Ctrl-C, it needs a group of its own; else it shares ours, and the
  // terminal's Ctrl-C reaches it as it reaches podrun.
  const bool own_group = InterruptsNoted();
  SpawnRequest request{.argv = args,
                       .fds = {{STDIN_FILENO, kSpawnDevNull},
                               {STDOUT_FILENO, out_w.get()},
                               {STDERR_FILENO, err_w.get()}},
                       .group = own_group ? SpawnGroup::kNewGroup : SpawnGroup::kInherit};
  pid_t pid = -1;
  try {
    pid = SpawnProcess(request);
  } catch (const SpawnError& e) {
    result.err = e.what();
    return result;
  }
  out_w.reset();
  err_w.reset();
  const pid_t target = own_group ? -pid : pid;
  auto interrupted = [&] { return InterruptCount() != interrupts_at_start; };
  const auto give_up_at = Clock::now() + deadline;
  auto past_deadline = [&] { return deadline.count() > 0 && Clock::now() >= give_up_at; };

  pollfd fds[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  char buf[65536];
  int open = 2;
  while (open > 0 && !interrupted() && !past_deadline()) {
    const int ready = ::poll(fds, 2, static_cast<int>(kInterruptPoll.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !fds[i].revents) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  // Its output has ended (or a Ctrl-C or the deadline came): reap it, still heeding both.
  int status = 0;
  for (;;) {
    if (interrupted()) {
      result.interrupted = true;
      status = StopAndReap(pid, target);
      break;
    }
    if (past_deadline()) {
      result.timed_out = true;
      status = StopAndReap(pid, target);
      break;
    }
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    std::this_thread::sleep_for(kReapPoll);
  }
  result.exit_code = ExitCodeOf(status);
  return result;
}

}  // namespace podrun
