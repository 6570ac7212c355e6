// The per-job supervisor (see supervisor.h): its run and its loop.
#include "worker/supervisor/supervisor_control.h"
#include "worker/supervisor/supervisor_process.h"

namespace podrun::agent::supervisor_internal {

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
    if (!sigfd_) throw std::runtime_error(ErrnoMessage("signalfd"));
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
    reply = ReadyReply(child_);
  } catch (const std::exception& e) {
    reply = ErrorReply(e.what());
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
    // A full in-memory buffer with a reader fetching from it: what the reader has had already
    // makes room; for what it has not had yet, the job waits.
    const bool reader = now - reader_seen_ < kReaderActiveWindow;
    writer_->HoldForReader(reader);
    const bool pause =
        reader && writer_->undelivered_bytes() + kChunkBytes > LogWriter::kMaxHeldBytes;

    pollfd fds[kClientKind + kMaxClients];
    int kinds[kClientKind + kMaxClients];
    nfds_t n = 0;
    fds[n] = {sigfd_.get(), POLLIN, 0}, kinds[n++] = 0;
    if (ran_) fds[n] = {ran_.get(), POLLIN, 0}, kinds[n++] = 2;
    for (int s = 0; s < 2; ++s) {
      if (pipes_[s] && !pause) fds[n] = {pipes_[s].get(), POLLIN, 0}, kinds[n++] = 3 + s;
    }
    n = AddControlFds(fds, kinds, n);
    int timeout = -1;
    for (auto t : {kill_at_, drain_until_, next_retry_, ClientsDeadline()}) {
      if (t != Clock::time_point::max())
        timeout = std::min(timeout < 0 ? 60'000 : timeout, MsUntil(t));
    }
    if (pause) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
    if (::poll(fds, n, timeout) < 0) {
      if (errno == EINTR) continue;
      Say(ErrnoMessage("poll"));
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      switch (kinds[i]) {
        case 0:
          OnSignal();
          break;
        case 2:
          OnChildReport();
          break;
        case 3:
        case 4:
          ReadPipe(kinds[i] - 3);
          break;
        default:
          OnControl(kinds[i]);
          break;
      }
    }
    EndClients();
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
  // The job runs now. An attached launch follows its log from the start: output is held for a
  // reader until one has had kReaderActiveWindow to show up, not dropped before it first asks.
  reader_seen_ = Clock::now();
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

}  // namespace podrun::agent::supervisor_internal

namespace podrun::agent {

std::filesystem::path SupervisorSocketPath(const std::filesystem::path& home, pid_t pid) {
  return home / "run" / ("sup-" + std::to_string(pid) + ".sock");
}

int Supervise(const SuperviseArgs& args) { return supervisor_internal::Supervisor(args).Run(); }

}  // namespace podrun::agent
