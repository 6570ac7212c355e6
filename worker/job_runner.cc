// Preparing, starting, supervising and stopping job processes (see job_runner.h).
#include "worker/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "proto/log_record.h"
#include "proto/private_state.h"
#include "worker/agent_error.h"

extern char** environ;

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kChunkBytes = 64u << 10;
// After the leader exits, how long the rest of its group may keep the pipes open before it is
// killed, and how long after that the pipes are drained before they are abandoned.
constexpr auto kDrainAfterExit = std::chrono::seconds(2);
// How long to wait for a SIGKILLed group to disappear.
constexpr auto kKillWait = std::chrono::seconds(30);
constexpr auto kGroupPollInterval = std::chrono::milliseconds(10);
// How long a waiting process may take to exit once its go socket is closed before it is killed.
constexpr auto kWaitingExitTimeout = std::chrono::seconds(1);

constexpr char kShell[] = "/bin/bash";

std::string ErrnoText(int err) { return std::strerror(err); }

// True while any process of the group exists (zombies included).
bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

// Waits until the group is gone or the deadline; true if gone.
bool WaitGroupGone(pid_t pgid, Clock::time_point deadline) {
  while (GroupAlive(pgid)) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(kGroupPollInterval);
  }
  return true;
}

// SIGTERM, then SIGKILL after `grace` if the group is still there; true if SIGKILL was needed.
bool TerminateGroup(pid_t pgid, std::chrono::seconds grace) {
  ::kill(-pgid, SIGTERM);
  if (WaitGroupGone(pgid, Clock::now() + grace)) return false;
  ::kill(-pgid, SIGKILL);
  WaitGroupGone(pgid, Clock::now() + kKillWait);
  return true;
}

}  // namespace

std::filesystem::path UserHome() {
  if (const char* home = std::getenv("HOME"); home && *home) return home;
  // Without NSS (getpwuid is unsafe in a static binary): look the uid up in /etc/passwd.
  std::ifstream passwd("/etc/passwd");
  const std::string uid = std::to_string(::getuid());
  for (std::string line; std::getline(passwd, line);) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, ':');) fields.push_back(field);
    if (fields.size() >= 6 && fields[2] == uid && !fields[5].empty()) return fields[5];
  }
  return "/";
}

namespace {

std::string Key(const std::string& job_id, uint32_t attempt) {
  return job_id + "/" + std::to_string(attempt);
}

void Validate(const JobSpec& spec) {
  if (!IsValidJobId(spec.job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "job id \"" + spec.job_id + "\": use 1-128 of [A-Za-z0-9._-]");
  }
  if (spec.attempt == 0) throw AgentError(ErrorKind::kInvalidArgument, "attempt must be >= 1");
  if (spec.run.empty()) throw AgentError(ErrorKind::kInvalidArgument, "run is empty");
  if (spec.run.find('\0') != std::string::npos) {
    throw AgentError(ErrorKind::kInvalidArgument, "run contains a NUL byte");
  }
  for (const auto& [key, value] : spec.env) {
    if (key.empty() || key.find_first_of(std::string("=\0", 2)) != std::string::npos ||
        value.find('\0') != std::string::npos) {
      throw AgentError(ErrorKind::kInvalidArgument, "env: bad variable name \"" + key + "\"");
    }
  }
}

// ---- The prepared process ----
// Forked by Prepare from a multi-threaded agent: until it execs, it makes only
// async-signal-safe calls, on data built before the fork. It talks to the agent through its
// end of a unix socket pair (close-on-exec, so the agent sees end-of-file once it has exec'd):
// it sends one ChildReport (kReady once set up, or the step that failed), then reads the
// one-byte GO; end-of-file there means "never start" (or the agent is gone).

enum ChildStep : int32_t { kReady = 0, kSession, kStdio, kChdir, kExec };
struct ChildReport {
  int32_t step = kReady;
  int32_t err = 0;
};

struct ChildPlan {
  int sock = -1;  // the child's end of the go socket
  int devnull = -1, out = -1, err = -1;
  const char* workdir = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

void SendReport(int sock, ChildStep step, int err) {
  const ChildReport report{step, err};
  (void)!::write(sock, &report, sizeof report);  // 8 bytes into an empty socket: not split
}

[[noreturn]] void ChildFailed(int sock, ChildStep step) {
  SendReport(sock, step, errno);
  ::_exit(127);  // as a shell's "cannot execute"
}

// Closes every descriptor from 3 up but `keep` (>= 3).
void CloseFdsExcept(int keep) {
  if ((keep == 3 || ::close_range(3, static_cast<unsigned>(keep) - 1, 0) == 0) &&
      ::close_range(static_cast<unsigned>(keep) + 1, ~0u, 0) == 0) {
    return;
  }
  rlimit limit{};  // no close_range (Linux < 5.9)
  int max_fd = 1 << 16;
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < static_cast<rlim_t>(max_fd)) {
    max_fd = static_cast<int>(limit.rlim_cur);
  }
  for (int fd = 3; fd < max_fd; ++fd) {
    if (fd != keep) ::close(fd);
  }
}

// The forked child: everything posix_spawn did (new session, default signal dispositions and
// an empty mask, stdio), then wait for GO, chdir and exec. All signals are blocked on entry.
[[noreturn]] void RunPreparedChild(const ChildPlan& plan) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // EINVAL for some
  if (::setsid() < 0) ChildFailed(plan.sock, kSession);
  if (::dup2(plan.devnull, STDIN_FILENO) < 0 || ::dup2(plan.out, STDOUT_FILENO) < 0 ||
      ::dup2(plan.err, STDERR_FILENO) < 0) {
    ChildFailed(plan.sock, kStdio);
  }
  // Nothing of the agent's (other jobs' pipes and go sockets above all) stays open here.
  CloseFdsExcept(plan.sock);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  SendReport(plan.sock, kReady, 0);
  char go = 0;
  ssize_t got;
  while ((got = ::read(plan.sock, &go, 1)) < 0 && errno == EINTR) {
  }
  if (got != 1) ::_exit(0);  // stopped, replaced or the agent is gone: run nothing
  if (::chdir(plan.workdir) != 0) ChildFailed(plan.sock, kChdir);
  ::umask(InheritedUmask());  // the agent runs with 077; the job with its login umask
  ::execve(kShell, plan.argv, plan.envp);
  ChildFailed(plan.sock, kExec);
}

// Reads one ChildReport; false on end-of-file (or an error) before a whole one.
bool ReadReport(int sock, ChildReport* report) {
  auto* bytes = reinterpret_cast<char*>(report);
  size_t have = 0;
  while (have < sizeof *report) {
    const ssize_t got = ::read(sock, bytes + have, sizeof *report - have);
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
  }
  return std::string(step) + ": " + ErrnoText(report.err);
}

std::string DescribeWaitStatus(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "exit code " + std::to_string(WEXITSTATUS(status));
}

// Moves a descriptor above 0-2 (so that the child's dup2 onto stdio cannot clobber it).
UniqueFd AboveStdio(UniqueFd fd) {
  if (fd.get() > STDERR_FILENO) return fd;
  UniqueFd moved(::fcntl(fd.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1));
  if (!moved) throw AgentError(ErrorKind::kInternal, "fcntl: " + ErrnoText(errno));
  return moved;
}

void WaitPid(pid_t pid, int* status) {
  while (::waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

// Sleeps until the wall clock reads `at_ns`; returns at once if that is past or absurdly far
// (more than kMaxStartDelay ahead: a clock mix-up must not hold a job back).
void WaitUntilWallClock(int64_t at_ns) {
  constexpr auto kMaxStartDelay = std::chrono::seconds(10);
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  if (at_ns <= now_ns || at_ns - now_ns > std::chrono::nanoseconds(kMaxStartDelay).count()) return;
  timespec at{static_cast<time_t>(at_ns / 1000000000), static_cast<long>(at_ns % 1000000000)};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
}

// SCHED_FIFO for the calling thread until Drop(), where the agent may have it (root,
// CAP_SYS_NICE or an RLIMIT_RTPRIO); else nothing. All workers of a pod wake at one instant;
// with a normal priority, a worker's wake-up can queue behind the jobs that other agents on
// the same host (a test pod) have just released (a login shell is tens of ms of CPU), or
// behind other load: 16 agents on 2 cores start 15-35 ms apart, and within 1 ms with this.
// Under it the thread only sleeps, then writes one byte.
class RealtimeWhileStarting {
 public:
  RealtimeWhileStarting() {
    if (::pthread_getschedparam(::pthread_self(), &policy_, &param_) != 0) return;
    sched_param realtime{};
    realtime.sched_priority = ::sched_get_priority_min(SCHED_FIFO);
    raised_ = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &realtime) == 0;
  }
  ~RealtimeWhileStarting() { Drop(); }
  RealtimeWhileStarting(const RealtimeWhileStarting&) = delete;
  RealtimeWhileStarting& operator=(const RealtimeWhileStarting&) = delete;

  // Back to the thread's own policy (before it creates threads, which would inherit it).
  void Drop() {
    if (raised_) ::pthread_setschedparam(::pthread_self(), policy_, &param_);
    raised_ = false;
  }

 private:
  int policy_ = SCHED_OTHER;
  sched_param param_{};
  bool raised_ = false;
};

ExitStatus ToExitStatus(int wait_status) {
  ExitStatus exit;
  if (WIFSIGNALED(wait_status)) {
    exit.signal = WTERMSIG(wait_status);
  } else {
    exit.exit_code = WEXITSTATUS(wait_status);
  }
  return exit;
}

}  // namespace

int64_t WallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::filesystem::path ResolveWorkdir(const std::string& workdir) {
  const std::filesystem::path home = UserHome();
  std::filesystem::path path;
  if (workdir.empty() || workdir == "~") {
    path = home;
  } else if (workdir.starts_with("~/")) {
    path = home / workdir.substr(2);
  } else if (workdir.starts_with("~")) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "workdir " + workdir + ": only ~ and ~/ are expanded");
  } else {
    path = home / workdir;  // an absolute workdir replaces home
  }
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec)
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "workdir " + path.string() + ": " + ec.message());
  auto canonical = std::filesystem::canonical(path, ec);
  if (ec || !std::filesystem::is_directory(canonical)) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "workdir " + path.string() + ": " + (ec ? ec.message() : "not a directory"));
  }
  if (::access(canonical.c_str(), R_OK | W_OK | X_OK) != 0) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "workdir " + canonical.string() + ": " + ErrnoText(errno));
  }
  return canonical;
}

// ---- Job --------------------------------------------------------------------------------------

Job::Job(JobSpec spec, JobDir dir, std::filesystem::path workdir)
    : dir_(std::move(dir)),
      workdir_(std::move(workdir)),
      grace_period_(spec.grace_period),
      spec_(std::move(spec)) {
  int out[2], err[2], sock[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    throw AgentError(ErrorKind::kInternal, "pipe: " + ErrnoText(errno));
  }
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    throw AgentError(ErrorKind::kInternal, "pipe: " + ErrnoText(errno));
  }
  UniqueFd err_r(err[0]), err_w(err[1]);
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0) {
    throw AgentError(ErrorKind::kInternal, "socketpair: " + ErrnoText(errno));
  }
  UniqueFd go(sock[0]), child_sock(sock[1]);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw AgentError(ErrorKind::kInternal, "/dev/null: " + ErrnoText(errno));
  out_w = AboveStdio(std::move(out_w));
  err_w = AboveStdio(std::move(err_w));
  child_sock = AboveStdio(std::move(child_sock));
  devnull = AboveStdio(std::move(devnull));

  // Environment: the agent's own, overridden and extended by the job's.
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string_view::npos && spec_.env.count(std::string(entry.substr(0, eq)))) continue;
    env_strings.emplace_back(entry);
  }
  for (const auto& [key, value] : spec_.env) env_strings.push_back(key + "=" + value);
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string bash = kShell, flag = "-lc";
  std::vector<char*> argv = {bash.data(), flag.data(), spec_.run.data(), nullptr};
  const ChildPlan plan{.sock = child_sock.get(),
                       .devnull = devnull.get(),
                       .out = out_w.get(),
                       .err = err_w.get(),
                       .workdir = workdir_.c_str(),
                       .argv = argv.data(),
                       .envp = envp.data()};

  // The child starts with every signal blocked: no agent handler runs in it before it has
  // reset the dispositions.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t pid = ::_Fork();  // no atfork handlers: the child only makes system calls
  if (pid == 0) RunPreparedChild(plan);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  // The secrets stay in this process's memory no longer than needed.
  for (auto& s : env_strings) std::fill(s.begin(), s.end(), '\0');
  for (auto& [key, value] : spec_.env) std::fill(value.begin(), value.end(), '\0');
  spec_.env.clear();
  if (pid < 0) throw AgentError(ErrorKind::kInternal, "fork: " + ErrnoText(fork_errno));

  std::lock_guard lock(mu_);
  waiting_pid_ = pid;
  go_ = std::move(go);
  out_r_ = std::move(out_r);
  err_r_ = std::move(err_r);
  child_sock.reset();  // from now on only the child holds its end (and the pipes' write ends)
  ChildReport report;
  const bool reported = ReadReport(go_.get(), &report);
  if (!reported || report.step != kReady) {
    int status = 0;
    go_.reset();
    out_r_.reset();
    err_r_.reset();
    WaitPid(std::exchange(waiting_pid_, 0), &status);
    throw AgentError(ErrorKind::kInternal,
                     "preparing the job's process: " +
                         (reported ? DescribeReport(report) : DescribeWaitStatus(status)));
  }
}

Job::~Job() {
  {
    std::lock_guard lock(mu_);
    if (state_ == JobState::kPrepared) EndWaitingProcess();
    if (state_ == JobState::kRunning && !exit_) ::kill(-pid_, SIGKILL);
  }
  if (reaper_.joinable()) reaper_.join();
  if (pump_.joinable()) pump_.join();
}

void Job::EndWaitingProcess() {
  go_.reset();  // end-of-file: the process exits without running anything
  out_r_.reset();
  err_r_.reset();
  if (waiting_pid_ <= 0) return;
  const pid_t pid = std::exchange(waiting_pid_, 0);
  int status = 0;
  const auto deadline = Clock::now() + kWaitingExitTimeout;
  while (true) {
    const pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc < 0 && errno == EINTR) continue;
    if (rc != 0) return;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ::kill(pid, SIGKILL);  // not exiting (stopped?): still our unreaped child, so safe to signal
  WaitPid(pid, &status);
}

void Job::Discard() {
  std::lock_guard lock(mu_);
  if (state_ == JobState::kPrepared) EndWaitingProcess();
}

pid_t Job::waiting_pid() const {
  std::lock_guard lock(mu_);
  return waiting_pid_;
}

std::optional<StartResult> Job::CheckStart() const {
  if (state_ == JobState::kStopped && exit_ && exit_->never_started) {
    throw AgentError(ErrorKind::kFailedPrecondition, "it was stopped before it started");
  }
  if (!start_error_.empty()) throw AgentError(ErrorKind::kInternal, start_error_);
  if (state_ != JobState::kPrepared) return StartResult{pid_, start_time_ns_, true};
  if (waiting_pid_ <= 0) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "its prepared process is gone (replaced, or the agent is exiting)");
  }
  return std::nullopt;
}

StartResult Job::Start(int64_t start_at_ns) {
  UniqueFd event, log;
  {
    std::lock_guard lock(mu_);
    if (auto started = CheckStart()) return *started;
    event = UniqueFd(::eventfd(0, EFD_CLOEXEC));
    if (!event) throw AgentError(ErrorKind::kInternal, "eventfd: " + ErrnoText(errno));
    log =
        UniqueFd(::open(dir_.log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!log) {
      throw AgentError(ErrorKind::kInternal, dir_.log_path().string() + ": " + ErrnoText(errno));
    }
  }

  RealtimeWhileStarting realtime;
  WaitUntilWallClock(start_at_ns);
  std::lock_guard lock(mu_);
  if (auto started = CheckStart()) return *started;  // a Stop or another Start meanwhile

  // GO: the process was forked, set up and waiting since Prepare.
  const char go = 1;
  ssize_t sent;
  while ((sent = ::send(go_.get(), &go, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  const int64_t start_time_ns = WallClockNs();
  realtime.Drop();
  // End-of-file once it has exec'd; a report if it could not.
  ChildReport report;
  const bool failed = sent != 1 || ReadReport(go_.get(), &report);
  go_.reset();
  const pid_t pid = std::exchange(waiting_pid_, 0);

  if (failed) {  // it ran nothing; the attempt ends here
    int status = 0;
    WaitPid(pid, &status);
    const std::string why =
        sent != 1 ? "its prepared process had ended (" + DescribeWaitStatus(status) + ")"
                  : "cannot run " + std::string(kShell) + " in " + workdir_.string() + ": " +
                        DescribeReport(report);
    out_r_.reset();
    err_r_.reset();
    ExitStatus exit = ToExitStatus(status);
    exit.end_time_ns = WallClockNs();
    try {
      AppendRecord(log.get(),
                   {1, exit.end_time_ns, LogStream::kStderr, "podrun-agent: " + why + "\n"});
      last_seq_ = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "podrun-agent: %s\n", e.what());
    }
    try {
      dir_.WriteExitStatus(exit);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "podrun-agent: %s\n", e.what());
    }
    exit_ = exit;
    state_ = JobState::kExited;
    start_error_ = why;
    cv_.notify_all();
    throw AgentError(ErrorKind::kInternal, why);
  }

  pid_ = pid;
  start_time_ns_ = start_time_ns;
  state_ = JobState::kRunning;
  log_fd_ = std::move(log);
  reaped_event_ = std::move(event);
  try {
    dir_.WriteStarted(pid, start_time_ns);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "podrun-agent: %s: %s\n", dir_.path().c_str(), e.what());
  }
  reaper_ = std::thread(&Job::Reap, this);
  pump_ = std::thread(&Job::Pump, this, std::move(out_r_), std::move(err_r_));
  return {pid, start_time_ns, false};
}

void Job::Reap() {
  int status = 0;
  pid_t rc;
  while ((rc = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
  }
  if (rc < 0) {
    std::fprintf(stderr, "podrun-agent: waitpid %d: %s\n", pid_, std::strerror(errno));
    status = 255 << 8;  // reaped elsewhere: report exit code 255
  }
  {
    std::lock_guard lock(mu_);
    wait_status_ = status;
    reaped_time_ns_ = WallClockNs();
  }
  const uint64_t one = 1;
  while (::write(reaped_event_.get(), &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Job::AppendChunk(uint64_t seq, uint8_t stream, std::string_view data) {
  LogRecord record{seq, WallClockNs(), static_cast<LogStream>(stream), std::string(data)};
  AppendRecord(log_fd_.get(), record);  // on disk before anyone can be told about it
  {
    std::lock_guard lock(mu_);
    last_seq_ = seq;
  }
  cv_.notify_all();
}

void Job::Pump(UniqueFd out, UniqueFd err) {
  std::string buf(kChunkBytes, '\0');
  uint64_t seq = 0;
  bool leader_gone = false;
  bool killed_rest = false;
  bool write_failed = false;
  Clock::time_point deadline;
  UniqueFd* pipes[2] = {&out, &err};
  while (out || err || !leader_gone) {
    pollfd fds[3];
    int stream_of[3] = {-1, -1, -1};
    nfds_t n = 0;
    for (int s = 0; s < 2; ++s) {
      if (*pipes[s]) {
        stream_of[n] = s;
        fds[n++] = {pipes[s]->get(), POLLIN, 0};
      }
    }
    if (!leader_gone) fds[n++] = {reaped_event_.get(), POLLIN, 0};
    int timeout_ms = -1;
    if (leader_gone) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, left.count()));
    }
    if (::poll(fds, n, timeout_ms) < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "podrun-agent: poll: %s\n", std::strerror(errno));
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (stream_of[i] < 0) {  // the reaper's event
        uint64_t value;
        (void)!::read(reaped_event_.get(), &value, sizeof value);
        leader_gone = true;
        deadline = Clock::now() + kDrainAfterExit;
        continue;
      }
      UniqueFd& pipe = *pipes[stream_of[i]];
      ssize_t got = ::read(pipe.get(), buf.data(), buf.size());
      if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (got <= 0) {
        pipe.reset();
        continue;
      }
      try {
        AppendChunk(seq + 1, static_cast<uint8_t>(stream_of[i]),
                    std::string_view(buf.data(), static_cast<size_t>(got)));
        ++seq;
      } catch (const std::exception& e) {
        if (!write_failed) std::fprintf(stderr, "podrun-agent: %s\n", e.what());
        write_failed = true;  // keep draining so the process never blocks on a full pipe
      }
    }
    if (leader_gone && (out || err) && Clock::now() >= deadline) {
      // During a requested stop, the group has until the end of its grace period.
      if (const auto stop_deadline = StopDeadline(); stop_deadline > deadline) {
        deadline = stop_deadline;
        continue;
      }
      if (!killed_rest) {  // the leader is gone; what remains of its group goes too
        ::kill(-pid_, SIGKILL);
        killed_rest = true;
        deadline = Clock::now() + kDrainAfterExit;
      } else {  // held open by a process outside the group
        out.reset();
        err.reset();
      }
    }
  }
  // The job ends with its leader: what remains of the group (with its stdio closed) goes too,
  // after the grace period of a requested stop.
  if (GroupAlive(pid_) && !WaitGroupGone(pid_, StopDeadline())) {
    ::kill(-pid_, SIGKILL);
    WaitGroupGone(pid_, Clock::now() + kKillWait);
  }
  Finalize();
}

void Job::Finalize() {
  ExitStatus exit;
  {
    std::lock_guard lock(mu_);
    exit = ToExitStatus(wait_status_.value_or(255 << 8));
    exit.end_time_ns = reaped_time_ns_ ? reaped_time_ns_ : WallClockNs();
    exit.stopped_by_request = stop_requested_;
  }
  log_fd_.reset();
  try {
    dir_.WriteExitStatus(exit);  // on disk before it is reported
  } catch (const std::exception& e) {
    std::fprintf(stderr, "podrun-agent: %s\n", e.what());
  }
  {
    std::lock_guard lock(mu_);
    exit_ = exit;
    state_ = exit.stopped_by_request ? JobState::kStopped : JobState::kExited;
  }
  cv_.notify_all();
}

StopResult Job::Stop(std::chrono::seconds grace) {
  std::unique_lock lock(mu_);
  if (state_ == JobState::kPrepared) {
    EndWaitingProcess();  // gone before the outcome is recorded
    ExitStatus exit;
    exit.end_time_ns = WallClockNs();
    exit.stopped_by_request = true;
    exit.never_started = true;
    dir_.WriteExitStatus(exit);
    exit_ = exit;
    state_ = JobState::kStopped;
    cv_.notify_all();
    return {false, false, exit};
  }
  if (exit_) return {false, false, *exit_};
  const auto grace_deadline = Clock::now() + grace;
  if (!stop_requested_ || grace_deadline < stop_deadline_) stop_deadline_ = grace_deadline;
  stop_requested_ = true;
  const pid_t pgid = pid_;
  lock.unlock();

  ::kill(-pgid, SIGTERM);
  lock.lock();
  cv_.wait_until(lock, grace_deadline, [&] { return exit_.has_value(); });
  lock.unlock();
  // The leader may be gone while the rest of its group still handles SIGTERM.
  bool killed = false;
  if (!WaitGroupGone(pgid, grace_deadline)) {
    ::kill(-pgid, SIGKILL);
    killed = true;
  }
  lock.lock();
  if (!cv_.wait_for(lock, kKillWait + 2 * kDrainAfterExit, [&] { return exit_.has_value(); })) {
    throw AgentError(ErrorKind::kInternal,
                     "process group " + std::to_string(pgid) + " did not end after SIGKILL");
  }
  const ExitStatus exit = *exit_;
  lock.unlock();
  if (!WaitGroupGone(pgid, Clock::now() + kKillWait)) {
    throw AgentError(ErrorKind::kInternal,
                     "process group " + std::to_string(pgid) + " did not end after SIGKILL");
  }
  return {true, killed, exit};
}

Clock::time_point Job::StopDeadline() const {
  std::lock_guard lock(mu_);
  return stop_requested_ ? stop_deadline_ : Clock::time_point::min();
}

JobSnapshot Job::Snapshot() const {
  std::lock_guard lock(mu_);
  return {state_, pid_, start_time_ns_, spec_.worker_id, last_seq_, exit_};
}

void Job::WaitForProgress(uint64_t seen_seq, Clock::time_point deadline) const {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, deadline, [&] { return last_seq_ > seen_seq || exit_.has_value(); });
}

// ---- JobRunner --------------------------------------------------------------------------------

JobRunner::JobRunner(std::filesystem::path home) : home_(std::move(home)) {}

JobRunner::~JobRunner() {
  std::lock_guard lock(mu_);
  // A Job may outlive the runner in an RPC that still holds it: its waiting process does not.
  for (auto& [key, job] : jobs_) job->Discard();
  jobs_.clear();  // each Job kills its running group and joins its threads
}

PrepareResult JobRunner::Prepare(JobSpec spec) {
  Validate(spec);
  std::filesystem::path workdir = ResolveWorkdir(spec.workdir);
  JobDir dir(home_, spec.job_id, spec.attempt);
  const std::string key = Key(spec.job_id, spec.attempt);
  auto check_not_started = [&] {
    if (auto it = jobs_.find(key); it != jobs_.end()) {
      if (it->second->Snapshot().state != JobState::kPrepared) {
        throw AgentError(ErrorKind::kFailedPrecondition,
                         "job " + key + " has already been started or stopped on this worker");
      }
    } else if (dir.ReadPid() || dir.ReadExitStatus()) {
      throw AgentError(ErrorKind::kFailedPrecondition,
                       "job " + key + " already ran on this worker (under an earlier agent)");
    }
  };
  {
    std::lock_guard lock(mu_);
    check_not_started();
    try {
      dir.Create();
      dir.WriteWorkerId(spec.worker_id);
    } catch (const std::exception& e) {
      throw AgentError(ErrorKind::kFailedPrecondition, "job directory: " + std::string(e.what()));
    }
  }
  // Forks and waits for the child to be ready: not under the lock, which Start needs.
  auto job = std::make_shared<Job>(std::move(spec), dir, workdir);
  std::shared_ptr<Job> replaced;
  {
    std::lock_guard lock(mu_);
    check_not_started();  // a concurrent Start or Stop; `job` ends its process when destroyed
    replaced = std::exchange(jobs_[key], job);
  }
  if (replaced) replaced->Discard();
  return {workdir, dir.path()};
}

std::shared_ptr<Job> JobRunner::Find(const std::string& job_id, uint32_t attempt) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(Key(job_id, attempt));
  return it == jobs_.end() ? nullptr : it->second;
}

StartResult JobRunner::Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns) {
  auto job = Find(job_id, attempt);
  if (!job) {
    throw AgentError(ErrorKind::kNotFound,
                     "job " + Key(job_id, attempt) +
                         " is not prepared on this agent (was the agent restarted?)");
  }
  return job->Start(start_at_ns);
}

JobSnapshot JobRunner::Status(const std::string& job_id, uint32_t attempt) const {
  if (auto job = Find(job_id, attempt)) return job->Snapshot();
  if (!IsValidJobId(job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument, "bad job id \"" + job_id + "\"");
  }
  JobDir dir(home_, job_id, attempt);
  if (!dir.Exists()) {
    throw AgentError(ErrorKind::kNotFound, "no job " + Key(job_id, attempt) + " on this worker");
  }
  JobSnapshot snap;
  snap.pid = dir.ReadPid().value_or(0);
  snap.start_time_ns = dir.ReadStartTime().value_or(0);
  snap.worker_id = dir.ReadWorkerId().value_or(0);
  snap.last_seq = LastSeqInLog(dir.log_path());
  snap.exit = dir.ReadExitStatus();
  if (snap.exit) {
    snap.state = snap.exit->stopped_by_request ? JobState::kStopped : JobState::kExited;
  }
  return snap;
}

StopResult JobRunner::Stop(const std::string& job_id, uint32_t attempt,
                           std::chrono::seconds grace) {
  if (auto job = Find(job_id, attempt)) return job->Stop(grace);
  JobSnapshot snap = Status(job_id, attempt);
  if (snap.exit) return {false, false, *snap.exit};
  // An earlier agent's attempt without an outcome: its group may still run. Our job leaders
  // lead their own session, which guards against signalling a recycled pid.
  StopResult result;
  if (snap.pid > 0 && ::getsid(snap.pid) == snap.pid) {
    result.was_running = true;
    result.killed = TerminateGroup(snap.pid, grace);
  }
  result.exit.end_time_ns = WallClockNs();
  result.exit.stopped_by_request = true;
  if (snap.pid > 0) {
    result.exit.signal = result.killed ? SIGKILL : SIGTERM;
  } else {
    result.exit.never_started = true;  // prepared by an earlier agent, never started
  }
  JobDir(home_, job_id, attempt).WriteExitStatus(result.exit);
  return result;
}

int JobRunner::RunningJobs() const {
  std::lock_guard lock(mu_);
  int running = 0;
  for (const auto& [key, job] : jobs_) running += job->Snapshot().state == JobState::kRunning;
  return running;
}

void JobRunner::StopAll() {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, job] : jobs_) jobs.push_back(job);
  }
  for (auto& job : jobs) {
    if (job->Snapshot().state == JobState::kRunning) job->Stop(job->grace_period());
  }
}

}  // namespace podrun::agent
