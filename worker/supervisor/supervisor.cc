// The per-job supervisor (see supervisor.h): its run and its loop, over the job's start
// (plan_launcher.h), its control socket (control_server.h) and its recorded end
// (exit_recorder.h).
#include "worker/supervisor/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "proto/log_record.h"
#include "proto/process_end.h"
#include "proto/process_identity.h"
#include "proto/protocol_version.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/base/wall_clock.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/step_file.h"
#include "worker/supervisor/control_server.h"
#include "worker/supervisor/exit_recorder.h"
#include "worker/supervisor/log_writer.h"
#include "worker/supervisor/plan_launcher.h"
#include "worker/supervisor/prepared_child.h"
#include "worker/supervisor/step_reader.h"
#include "worker/supervisor/supervisor_control.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kControlFd = 3;
constexpr int kGoFd = 4;
// The most one record of output holds, and the supervisor's read size. 128 KiB rather than 256:
// a read into a buffer of 256 KiB cost twice the kernel's copy per byte out of the job's 1 MiB
// pipe on this machine (docs/decisions.md, "The supervisor's reads").
constexpr size_t kChunkBytes = 128u << 10;
constexpr off_t kReserveBytes = 256 << 10;
// After the leader exits, how long the rest of its group may keep the pipes open before it is
// killed, and how long after that the pipes are drained before they are abandoned.
constexpr auto kDrainAfterExit = seconds(2);
constexpr auto kKillWait = seconds(30);
constexpr auto kRetryWriteInterval = seconds(1);
// The step record is written at most this often while the step changes (and once at the end).
constexpr auto kStepWriteInterval = seconds(1);
// While output is held in memory and a reader fetched it this recently, a full buffer pauses the
// job's pipes (the job waits) rather than dropping output. A reader that keeps up asks several
// times a second; this long is for one whose own output (an SSH channel) is slow for a while.
constexpr auto kReaderActiveWindow = seconds(10);

bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

int MsUntil(Clock::time_point t) {
  auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

// One supervisor process: the job's child, its pipes and log, and the stop, drain and kill
// policy; the plan and the fork are PlanLauncher's, the control socket ControlServer's, the
// recorded end ExitRecorder's.
class Supervisor {
 public:
  explicit Supervisor(const SuperviseArgs& args)
      : args_(args), dir_(args.home, args.job_id, args.attempt) {}
  int Run();

 private:
  // The tags of the fds in Loop's poll set; the control server's are kControlTag and above.
  enum Tag : int { kSignalTag, kRanTag, kStdoutTag, kStderrTag, kControlTag };

  void Loop();
  void OnChildReport();
  void OnSignal();
  void ReapChildren();  // the leader and any orphan of the job (we are their subreaper)
  void ReadPipe(int s);
  // The start's confirmation window passed (start_confirmation.h): said in the log, and the job
  // stopped as a requested stop would be.
  void StopUnconfirmed();
  // Writes the step record if it changed (`force`: also within kStepWriteInterval of the last).
  void WriteSteps(bool force);
  // What remains of the job's group stopped (a requested stop's grace, then SIGKILL), and the
  // end recorded.
  void Finalize();
  void Say(const std::string& text) {
    std::fprintf(stderr, "podrun-agent supervise %s/%u: %s\n", args_.job_id.c_str(), args_.attempt,
                 text.c_str());
  }

  const SuperviseArgs args_;
  const JobDir dir_;
  PlanLauncher plan_;

  UniqueFd sigfd_, ran_, pipes_[2];
  std::optional<AppendOnlyLog> log_;
  std::optional<LogWriter> writer_;
  std::optional<ControlServer> control_;  // answers from writer_
  std::optional<StepReader> steps_;       // the plan's progress pattern; set when it has one
  Clock::time_point next_steps_write_{};
  bool steps_write_failed_ = false;  // said once
  pid_t child_ = 0;
  std::optional<int> wait_status_;
  int64_t end_time_ns_ = 0;
  std::optional<ChildReport> report_;  // from the `ran` pipe
  bool ran_closed_ = false;
  bool term_sent_ = false, killed_rest_ = false;
  bool killed_ = false;  // a requested stop needed SIGKILL
  Clock::time_point kill_at_ = Clock::time_point::max();
  Clock::time_point drain_until_ = Clock::time_point::max();
  Clock::time_point next_retry_ = Clock::time_point::max();
  Clock::time_point job_started_{};  // the job exec'd (a reader may be about to ask for it)
};

int Supervisor::Run() {
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGPIPE, SIGQUIT}) ::signal(sig, SIG_IGN);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);  // it holds the job's secrets until the fork
  // Processes the job leaves behind become ours, so that we reap them (and see them go).
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  ::sigprocmask(SIG_BLOCK, &chld, nullptr);
  // Inherited through dup2, so not close-on-exec yet: the job must not keep either (its shell
  // gets the go socket back, prepared_child.h, and closes it when released: end-of-file then
  // tells the agent that the run runs).
  ::fcntl(kControlFd, F_SETFD, FD_CLOEXEC);
  ::fcntl(kGoFd, F_SETFD, FD_CLOEXEC);
  std::string reply;
  try {
    sigfd_.reset(::signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!sigfd_) throw std::runtime_error(ErrnoMessage("signalfd"));
    plan_.ReadPlan(kControlFd);
    if (!plan_.progress().empty()) steps_.emplace(plan_.progress());
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
    control_.emplace(SupervisorSocketPath(args_.home, ::getpid()), *writer_);
    LaunchedJob job = plan_.Launch(kGoFd);
    pipes_[0] = std::move(job.out);
    pipes_[1] = std::move(job.err);
    ran_ = std::move(job.ran);
    child_ = job.pid;
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
  try {
    control_->Linger();
  } catch (const std::exception& e) {
    Say(e.what());
  }
  ::unlink(SupervisorSocketPath(args_.home, ::getpid()).c_str());
  return 0;
}

void Supervisor::Loop() {
  while (pipes_[0] || pipes_[1] || !wait_status_ || ran_) {
    const auto now = Clock::now();
    // A requested stop: SIGTERM once the job runs (a job still waiting for GO ends without
    // running when the agent closes its go socket), SIGKILL after the grace period. A start
    // never confirmed in time is stopped the same way.
    const bool execd = ran_closed_ && !report_;
    StartConfirmation& confirmation = control_->confirmation();
    if (execd && !wait_status_ && confirmation.Due(now)) StopUnconfirmed();
    const bool stopping = control_->stop_requested() || confirmation.given_up();
    if (stopping && execd && !term_sent_ && !wait_status_) {
      ::kill(-child_, SIGTERM);
      term_sent_ = true;
      kill_at_ = now + (control_->stop_requested() ? control_->stop_grace() : confirmation.grace());
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
    if (steps_ && steps_->changed() && now >= next_steps_write_) WriteSteps(false);
    if (writer_->holding() && now >= next_retry_) {
      writer_->Retry(WallClockNs());
      next_retry_ = now + kRetryWriteInterval;
    }
    if (writer_->holding() && next_retry_ == Clock::time_point::max()) {
      next_retry_ = now + kRetryWriteInterval;
    }
    // A full in-memory buffer with a reader fetching from it: what the reader has had already
    // makes room; for what it has not had yet, the job waits.
    const bool reader =
        now - std::max(job_started_, control_->last_log_request()) < kReaderActiveWindow;
    writer_->HoldForReader(reader);
    // Just after the start, the job's output waits in its pipes (kOutputQuietAfterStart).
    const bool quiet = now < job_started_ + kOutputQuietAfterStart;
    const bool pause =
        quiet || (reader && writer_->undelivered_bytes() + kChunkBytes > LogWriter::kMaxHeldBytes);

    pollfd fds[kControlTag + ControlServer::kMaxFds];
    int tags[kControlTag + ControlServer::kMaxFds];
    nfds_t n = 0;
    fds[n] = {sigfd_.get(), POLLIN, 0}, tags[n++] = kSignalTag;
    if (ran_) fds[n] = {ran_.get(), POLLIN, 0}, tags[n++] = kRanTag;
    for (int s = 0; s < 2; ++s) {
      if (pipes_[s] && !pause) fds[n] = {pipes_[s].get(), POLLIN, 0}, tags[n++] = kStdoutTag + s;
    }
    n = control_->AddFds(fds, tags, n, kControlTag);
    int timeout = -1;
    const auto steps_at =
        steps_ && steps_->changed() ? next_steps_write_ : Clock::time_point::max();
    const auto confirm_at =
        wait_status_ ? Clock::time_point::max() : control_->confirmation().deadline();
    for (auto t :
         {kill_at_, drain_until_, next_retry_, control_->Deadline(), steps_at, confirm_at}) {
      if (t != Clock::time_point::max())
        timeout = std::min(timeout < 0 ? 60'000 : timeout, MsUntil(t));
    }
    if (pause) timeout = timeout < 0 ? 100 : std::min(timeout, 100);
    if (quiet) {
      timeout =
          std::min(timeout < 0 ? 100 : timeout, MsUntil(job_started_ + kOutputQuietAfterStart) + 1);
    }
    if (::poll(fds, n, timeout) < 0) {
      if (errno == EINTR) continue;
      Say(ErrnoMessage("poll"));
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      switch (tags[i]) {
        case kSignalTag:
          OnSignal();
          break;
        case kRanTag:
          OnChildReport();
          break;
        case kStdoutTag:
        case kStderrTag:
          ReadPipe(tags[i] - kStdoutTag);
          break;
        default:
          control_->OnEvents(tags[i] - kControlTag);
          break;
      }
    }
    control_->EndClients();
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
                      "podrun-agent: cannot run " + std::string(kShell) + " in " + plan_.workdir() +
                          ": " + DescribeReport(report) + "\n",
                      WallClockNs());
    }
    return;  // end-of-file follows
  }
  ran_.reset();
  ran_closed_ = true;
  // The job runs now. An attached launch follows its log from the start: output is held for a
  // reader until one has had kReaderActiveWindow to show up, not dropped before it first asks.
  job_started_ = Clock::now();
  if (!report_) control_->confirmation().Arm(job_started_);  // its window starts now
}

void Supervisor::StopUnconfirmed() {
  const StartConfirmation& confirmation = control_->confirmation();
  const std::string why = std::string(kStartUnconfirmedReason) + " (no confirmation within " +
                          std::to_string(confirmation.window().count()) +
                          " ms of the start): stopping the job (SIGTERM, SIGKILL after " +
                          std::to_string(confirmation.grace().count()) + " s)";
  writer_->Append(LogStream::kStderr, "podrun-agent: " + why + "\n", WallClockNs());
  Say(why);
}

void Supervisor::ReadPipe(int s) {
  static std::string buf(kChunkBytes, '\0');
  const ssize_t got = ::read(pipes_[s].get(), buf.data(), buf.size());
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (got <= 0) {
    pipes_[s].reset();
    return;
  }
  const std::string_view data(buf.data(), static_cast<size_t>(got));
  const int64_t now_ns = WallClockNs();
  writer_->Append(static_cast<LogStream>(s), data, now_ns);
  if (steps_) steps_->Add(data, now_ns, s);
}

void Supervisor::WriteSteps(bool force) {
  if (!steps_ || !steps_->changed() || (!force && Clock::now() < next_steps_write_)) return;
  next_steps_write_ = Clock::now() + kStepWriteInterval;
  try {
    WriteStepFile(dir_, steps_->TakeRecord(WallClockNs()));
  } catch (const std::exception& e) {
    if (!steps_write_failed_) Say(std::string("step record not written: ") + e.what());
    steps_write_failed_ = true;
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
  const JobEnd end{.wait_status = wait_status_,
                   .end_time_ns = end_time_ns_,
                   .never_started = report_ && report_->step == kNotStarted,
                   .discarded = control_->discarded(),
                   .stop_requested = control_->stop_requested(),
                   .killed = killed_,
                   .start_unconfirmed = control_->confirmation().given_up()};
  WriteSteps(/*force=*/true);  // the last steps, before the end is recorded
  for (const std::string& problem : ExitRecorder(dir_, *writer_).Record(end)) Say(problem);
}

}  // namespace

std::filesystem::path SupervisorSocketPath(const std::filesystem::path& home, pid_t pid) {
  return home / "run" / ("sup-" + std::to_string(pid) + ".sock");
}

int Supervise(const SuperviseArgs& args) { return Supervisor(args).Run(); }

}  // namespace podrun::agent
