// The job's prepared process: forked by the supervisor at Prepare, it sets itself up (own
// session and process group, default signals, stdin /dev/null, stdout/stderr to the log pipes),
// changes to the workdir and execs /bin/bash -lc with the job's run behind a first line of its
// own (ShellPreamble): the login shell reads its profile at Prepare, then tells the agent on the
// "go" socket that it is ready (a ChildReport kReady) and blocks on it, so that at the lockstep
// instant only one byte wakes it and the run's first command is next (a login shell is
// milliseconds of CPU, far more with a heavy profile: paid at the instant, by 8 workers
// sharing 2 cores, it was 20-40 ms of start skew). One byte (GO) and it closes both
// descriptors and runs the run; end-of-file instead (the attempt was stopped or replaced
// before its start, or the agent went away) and it reports kNotStarted on the `ran` pipe and
// exits running nothing. A step that fails before the shell (setsid, stdio, chdir, exec) is
// reported on the go socket (in place of kReady) and on the `ran` pipe. The supervisor takes
// end-of-file on `ran` with no report before it as the start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace podrun::agent {

enum ChildStep : int32_t { kReady = 0, kSession, kStdio, kChdir, kExec, kNotStarted };

struct ChildReport {
  int32_t step = kReady;
  int32_t err = 0;  // errno of the failed step
};

// What the child needs, built before the fork: it only makes async-signal-safe calls.
struct ChildPlan {
  int sock = -1;  // the child's end of the go socket
  int ran = -1;   // write end of the pipe to the supervisor
  int devnull = -1, out = -1, err = -1;
  const char* workdir = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// The line the login shell runs before the job's own (`go` and `ran` are the descriptors'
// numbers in the child): it sends kReady on `go`, waits for one byte on it (however long: a
// profile's TMOUT only makes it read again), and closes both; on end-of-file it sends
// kNotStarted on `ran` and exits 0. Builtins only, called through
// `\builtin` (`\exec`, whose redirections `builtin` would undo), so that no alias of the
// profile's, nor a function but one named exec, replaces them. The job's
// run follows it on a line of its own, so bash's own messages number the run's lines from 2.
std::string ShellPreamble(int go, int ran);
// ShellPreamble's length is under this.
inline constexpr size_t kShellPreambleMaxBytes = 512;

// A command line as /proc/PID/cmdline has it (arguments NUL-separated), without the preamble's
// line when it is a job's shell (for `why` and `top`: "/bin/bash -lc RUN", as it was started
// before the preamble); any other command line as it is.
std::string WithoutShellPreamble(std::string_view cmdline);

// The forked child. Call with every signal blocked; never returns.
[[noreturn]] void RunPreparedChild(const ChildPlan& plan);

// Reads one ChildReport from `fd`; false on end-of-file (or an error) before a whole one.
bool ReadReport(int fd, ChildReport* report);

// "chdir: No such file or directory".
std::string DescribeReport(const ChildReport& report);

inline constexpr char kShell[] = "/bin/bash";

}  // namespace podrun::agent
