// The per-job supervisor (see supervisor.h).
#include "worker/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "proto/log_record.h"
#include "proto/unique_fd.h"
#include "worker/base/process_identity.h"
#include "worker/base/unix_socket.h"
#include "worker/base/wall_clock.h"
#include "worker/jobdir/job_dir.h"
#include "worker/supervisor/log_writer.h"
#include "worker/supervisor/plan_codec.h"
#include "worker/supervisor/prepared_child.h"

extern char** environ;

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kControlFd = 3;
constexpr int kGoFd = 4;
constexpr size_t kChunkBytes = 256u << 10;  // the most one record of output holds
constexpr size_t kPipeBytes = 1u << 20;     // the job's stdout and stderr pipes
constexpr size_t kMaxPlanBytes = 64u << 20;
constexpr off_t kReserveBytes = 256 << 10;
// After the leader exits, how long the rest of its group may keep the pipes open before it is
// killed, and how long after that the pipes are drained before they are abandoned.
constexpr auto kDrainAfterExit = seconds(2);
constexpr auto kKillWait = seconds(30);
constexpr auto kRetryWriteInterval = seconds(1);
// After the end, how long records held only in memory wait for a live reader to fetch them.
constexpr auto kLingerForReaders = seconds(30);
constexpr auto kRequestTimeout = milliseconds(2000);
// While output is held in memory and a reader fetched it this recently, a full buffer pauses the
// job's pipes (the job waits) rather than dropping output.
constexpr auto kReaderActiveWindow = seconds(2);

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

int MsUntil(Clock::time_point t) {
  auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

class Supervisor {
 public:
  explicit Supervisor(const SuperviseArgs& args)
      : args_(args), dir_(args.home, args.job_id, args.attempt) {}
  int Run();

 private:
  void ReadPlan();
  pid_t ForkChild();
  void Loop();
  void OnChildReport();
  void OnSignal();
  void ReapChildren();  // the leader and any orphan of the job (we are their subreaper)
  void ServeRequest();
  void ReadPipe(int s);
  void Finalize();
  void Linger();
  void Say(const std::string& text) {
    std::fprintf(stderr, "podrun-agent supervise %s/%u: %s\n", args_.job_id.c_str(), args_.attempt,
                 text.c_str());
  }

  const SuperviseArgs args_;
  const JobDir dir_;
  std::string workdir_, run_;
  seconds grace_{10};
  std::vector<std::string> env_;

  UniqueFd listen_, sigfd_, ran_, pipes_[2];
  std::optional<AppendOnlyLog> log_;
  std::optional<LogWriter> writer_;
  pid_t child_ = 0;
  std::optional<int> wait_status_;
  int64_t end_time_ns_ = 0;
  std::optional<ChildReport> report_;  // from the `ran` pipe
  bool ran_closed_ = false;
  bool stop_requested_ = false, discard_ = false, term_sent_ = false, killed_rest_ = false;
  bool killed_ = false;  // a requested stop needed SIGKILL
  seconds stop_grace_{0};
  Clock::time_point kill_at_ = Clock::time_point::max();
  Clock::time_point drain_until_ = Clock::time_point::max();
  Clock::time_point next_retry_ = Clock::time_point::max();
  Clock::time_point reader_seen_ = Clock::time_point::min();
  uint64_t fetched_through_ = 0;  // the highest seq a LOG request has been sent
};

void Supervisor::ReadPlan() {
  std::string bytes;
  char buf[64 << 10];
  while (true) {
    const ssize_t got = ::read(kControlFd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw std::runtime_error(Errno("read plan"));
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
  grace_ = seconds(std::stoul(plan[2]));
  env_.assign(std::make_move_iterator(plan.begin() + 3), std::make_move_iterator(plan.end()));
}

pid_t Supervisor::ForkChild() {
  int out[2], err[2], ran[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
      ::pipe2(ran, O_CLOEXEC) != 0) {
    throw std::runtime_error(Errno("pipe"));
  }
  // Bigger pipes than the 64 KiB default: a job that prints fast blocks less often, and each
  // read takes more (fewer records, wakeups and writes per byte). Refused above the system's
  // pipe-max-size: then the default stays.
  (void)::fcntl(out[0], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  (void)::fcntl(err[0], F_SETPIPE_SZ, static_cast<int>(kPipeBytes));
  pipes_[0].reset(out[0]);
  pipes_[1].reset(err[0]);
  ran_.reset(ran[0]);
  UniqueFd out_w(out[1]), err_w(err[1]), ran_w(ran[1]);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw std::runtime_error(Errno("/dev/null"));

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
  std::vector<char*> argv = {bash.data(), flag.data(), run_.data(), nullptr};
  const ChildPlan plan{.sock = kGoFd,
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
  ::close(kGoFd);  // only the child (and the agent) hold the go socket now
  if (pid < 0) {
    errno = fork_errno;
    throw std::runtime_error(Errno("fork"));
  }
  return pid;
}

int Supervisor::Run() {
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGQUIT}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // it holds the job's secrets until the fork
  // Processes the job leaves behind become ours, so that we reap them (and see them go).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  // Inherited through dup2, so not close-on-exec yet: the job must not keep either (the agent
  // learns that the job exec'd from end-of-file on the go socket).
  ::fcntl(kControlFd, F_SETFD, FD_CLOEXEC);
  ::fcntl(kGoFd, F_SETFD, FD_CLOEXEC);
  std::string reply;
  try {
    sigfd_.reset(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd_) throw std::runtime_error(Errno("signalfd"));
    ReadPlan();
    auto self = ProcessIdentity::Of(::getpid());
    if (!self) throw std::runtime_error("cannot read /proc/self/stat");
    dir_.WriteSupervisor(*self);
    // The reserve: space for the job's own files once the disk is full.
    {
      UniqueFd reserve(::open(dir_.reserve_path().c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
      if (!reserve || ::posix_fallocate(reserve.get(), 0, kReserveBytes) != 0) {
        Say("cannot reserve disk space in " + dir_.path().string());
      }
    }
    log_.emplace(dir_.log_path());
    writer_.emplace([this](const LogRecord& r) { log_->Append(r); },
                    [this] { ::unlink(dir_.reserve_path().c_str()); });
    // Listen before the agent is told READY, so that a STOP can never miss us.
    listen_ = ListenUnix(SupervisorSocketPath(args_.home, ::getpid()));
    child_ = ForkChild();
    if (auto id = ProcessIdentity::Of(child_)) dir_.WriteJobProcess(*id);
    reply = "READY " + std::to_string(child_) + "\n";
  } catch (const std::exception& e) {
    reply = "ERROR " + std::string(e.what()) + "\n";
  }
  (void)!::write(kControlFd, reply.data(), reply.size());
  ::close(kControlFd);
  if (!child_) {
    ::unlink(dir_.reserve_path().c_str());
    return 1;
  }
  Loop();
  Finalize();
  Linger();
  ::unlink(SupervisorSocketPath(args_.home, ::getpid()).c_str());
  return 0;
}

void Supervisor::Loop() {
  while (pipes_[0] || pipes_[1] || !wait_status_ || ran_) {
    const auto now = Clock::now();
    // A requested stop: SIGTERM once the job runs (a job still waiting for GO ends without
    // running when the agent closes its go socket), SIGKILL after the grace period.
    const bool execd = ran_closed_ && !report_;
    if (stop_requested_ && execd && !term_sent_ && !wait_status_) {
      ::kill(-child_, SIGTERM);
      term_sent_ = true;
      kill_at_ = now + stop_grace_;
    }
    if (term_sent_ && now >= kill_at_ && GroupAlive(child_)) {
      ::kill(-child_, SIGKILL);
      killed_ = true;
      kill_at_ = Clock::time_point::max();
    }
    if (wait_status_ && (pipes_[0] || pipes_[1]) && now >= drain_until_) {
      if (term_sent_ && kill_at_ != Clock::time_point::max() && kill_at_ > drain_until_) {
        drain_until_ = kill_at_;   // during a requested stop, the group has its grace period
      } else if (!killed_rest_) {  // the leader is gone; what remains of its group goes too
        ::kill(-child_, SIGKILL);
        killed_rest_ = true;
        drain_until_ = now + kDrainAfterExit;
      } else {  // held open by a process outside the group
        pipes_[0].reset();
        pipes_[1].reset();
        continue;
      }
    }
    if (writer_->holding() && now >= next_retry_) {
      writer_->Retry(WallClockNs());
      next_retry_ = now + kRetryWriteInterval;
    }
    if (writer_->holding() && next_retry_ == Clock::time_point::max()) {
      next_retry_ = now + kRetryWriteInterval;
    }
    // A full in-memory buffer with a reader fetching from it: the job waits for the reader.
    const bool pause = writer_->held_bytes() + kChunkBytes > LogWriter::kMaxHeldBytes &&
                       now - reader_seen_ < kReaderActiveWindow;

    pollfd fds[5];
    int kinds[5];
    nfds_t n = 0;
    fds[n] = {sigfd_.get(), POLLIN, 0}, kinds[n++] = 0;
    fds[n] = {listen_.get(), POLLIN, 0}, kinds[n++] = 1;
    if (ran_) fds[n] = {ran_.get(), POLLIN, 0}, kinds[n++] = 2;
    for (int s = 0; s < 2; ++s) {
      if (pipes_[s] && !pause) fds[n] = {pipes_[s].get(), POLLIN, 0}, kinds[n++] = 3 + s;
    }
    int timeout = -1;
    for (auto t : {kill_at_, drain_until_, next_retry_}) {
      if (t != Clock::time_point::max())
        timeout = std::min(timeout < 0 ? 60'000 : timeout, MsUntil(t));
    }
    if (pause) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
    if (::poll(fds, n, timeout) < 0) {
      if (errno == EINTR) continue;
      Say(Errno("poll"));
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      switch (kinds[i]) {
        case 0:
          OnSignal();
          break;
        case 1:
          ServeRequest();
          break;
        case 2:
          OnChildReport();
          break;
        default:
          ReadPipe(kinds[i] - 3);
          break;
      }
    }
  }
}

void Supervisor::OnSignal() {
  signalfd_siginfo info;
  while (::read(sigfd_.get(), &info, sizeof info) > 0) {
  }
  ReapChildren();
}

void Supervisor::ReapChildren() {
  while (true) {
    int status = 0;
    const pid_t rc = ::waitpid(-1, &status, WNOHANG);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return;
    if (rc == child_ && !wait_status_) {
      wait_status_ = status;
      end_time_ns_ = WallClockNs();
      drain_until_ = Clock::now() + kDrainAfterExit;
    }
  }
}

void Supervisor::OnChildReport() {
  ChildReport report;
  if (ReadReport(ran_.get(), &report)) {
    report_ = report;
    if (report.step != kNotStarted) {
      writer_->Append(LogStream::kStderr,
                      "podrun-agent: cannot run " + std::string(kShell) + " in " + workdir_ + ": " +
                          DescribeReport(report) + "\n",
                      WallClockNs());
    }
    return;  // end-of-file follows
  }
  ran_.reset();
  ran_closed_ = true;
}

void Supervisor::ReadPipe(int s) {
  static std::string buf(kChunkBytes, '\0');
  const ssize_t got = ::read(pipes_[s].get(), buf.data(), buf.size());
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    pipes_[s].reset();
    return;
  }
  writer_->Append(static_cast<LogStream>(s), std::string_view(buf.data(), static_cast<size_t>(got)),
                  WallClockNs());
}

void Supervisor::ServeRequest() {
  UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return;
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      peer.uid != ::getuid()) {
    return;
  }
  timeval tv{kRequestTimeout.count() / 1000, 0};
  ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 256 && ::read(conn.get(), &c, 1) == 1 && c != '\n') line += c;
  std::string reply;
  if (line.starts_with("LOG ")) {
    const uint64_t from = std::strtoull(line.c_str() + 4, nullptr, 10);
    for (const LogRecord& r : writer_->Held(from)) {
      reply += EncodeLogRecord(r);
      fetched_through_ = std::max(fetched_through_, r.seq);
    }
    reader_seen_ = Clock::now();
  } else if (line.starts_with("STOP ")) {
    stop_requested_ = true;
    stop_grace_ = seconds(std::strtoul(line.c_str() + 5, nullptr, 10));
    reply = "OK\n";
  } else if (line == "DISCARD") {
    discard_ = true;
    reply = "OK\n";
  } else {
    reply = "ERROR unknown request\n";
  }
  size_t done = 0;
  while (done < reply.size()) {
    const ssize_t n = ::send(conn.get(), reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

void Supervisor::Finalize() {
  // What remains of the group (its stdio closed) goes too, after a requested stop's grace.
  const auto kill_at = term_sent_ ? kill_at_ : Clock::now();
  while (ReapChildren(), GroupAlive(child_) && Clock::now() < kill_at) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  if (GroupAlive(child_)) {
    ::kill(-child_, SIGKILL);
    killed_ = killed_ || term_sent_;
    const auto deadline = Clock::now() + kKillWait;
    while (ReapChildren(), GroupAlive(child_) && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
  }
  const bool never_started = report_ && report_->step == kNotStarted;
  if (never_started && discard_) return;  // replaced: the new supervisor records the attempt
  ExitStatus exit;
  const int status = wait_status_.value_or(255 << 8);
  if (never_started) {
    exit.never_started = true;
  } else if (WIFSIGNALED(status)) {
    exit.signal = WTERMSIG(status);
  } else {
    exit.exit_code = WEXITSTATUS(status);
  }
  exit.end_time_ns = end_time_ns_ ? end_time_ns_ : WallClockNs();
  exit.stopped_by_request = stop_requested_;
  exit.killed = killed_;
  writer_->Finish(WallClockNs());
  ::unlink(dir_.reserve_path().c_str());  // room for the outcome, in any case
  // The gap first: whoever sees the exit status sees the gap too.
  if (auto gap = writer_->gap(); gap && gap->chunks > 0) {
    try {
      dir_.WriteLogGap(*gap);
    } catch (const std::exception& e) {
      Say(e.what());
    }
  }
  try {
    dir_.WriteExitStatus(exit);
  } catch (const std::exception& e) {
    Say(e.what());
  }
}

void Supervisor::Linger() {
  const auto deadline = Clock::now() + kLingerForReaders;
  while (!writer_->Held(fetched_through_ + 1).empty() && Clock::now() < deadline) {
    pollfd fd{listen_.get(), POLLIN, 0};
    if (::poll(&fd, 1, MsUntil(deadline)) > 0) ServeRequest();
  }
}

}  // namespace

std::filesystem::path SupervisorSocketPath(const std::filesystem::path& home, pid_t pid) {
  return home / "run" / ("sup-" + std::to_string(pid) + ".sock");
}

int Supervise(const SuperviseArgs& args) { return Supervisor(args).Run(); }

}  // namespace podrun::agent
