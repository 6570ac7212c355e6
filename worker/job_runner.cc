// Spawning, supervising and stopping job processes (see job_runner.h).
#include "worker/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "proto/log_record.h"
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

// RAII for the posix_spawn attribute objects.
struct SpawnActions {
  posix_spawn_file_actions_t actions;
  SpawnActions() { posix_spawn_file_actions_init(&actions); }
  ~SpawnActions() { posix_spawn_file_actions_destroy(&actions); }
};
struct SpawnAttr {
  posix_spawnattr_t attr;
  SpawnAttr() { posix_spawnattr_init(&attr); }
  ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
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
      spec_(std::move(spec)) {}

Job::~Job() {
  {
    std::lock_guard lock(mu_);
    if (state_ == JobState::kRunning && !exit_) ::kill(-pid_, SIGKILL);
  }
  if (reaper_.joinable()) reaper_.join();
  if (pump_.joinable()) pump_.join();
}

StartResult Job::Start() {
  std::lock_guard lock(mu_);
  if (state_ == JobState::kStopped && exit_ && exit_->never_started) {
    throw AgentError(ErrorKind::kFailedPrecondition, "it was stopped before it started");
  }
  if (state_ != JobState::kPrepared) return {pid_, start_time_ns_, true};

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    throw AgentError(ErrorKind::kInternal, "pipe: " + ErrnoText(errno));
  }
  UniqueFd out_r(out[0]), out_w(out[1]);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    throw AgentError(ErrorKind::kInternal, "pipe: " + ErrnoText(errno));
  }
  UniqueFd err_r(err[0]), err_w(err[1]);
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull) throw AgentError(ErrorKind::kInternal, "/dev/null: " + ErrnoText(errno));
  UniqueFd event(::eventfd(0, EFD_CLOEXEC));
  if (!event) throw AgentError(ErrorKind::kInternal, "eventfd: " + ErrnoText(errno));
  UniqueFd log(::open(dir_.log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!log) {
    throw AgentError(ErrorKind::kInternal, dir_.log_path().string() + ": " + ErrnoText(errno));
  }

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
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string bash = "/bin/bash", flag = "-lc";
  std::vector<char*> argv = {bash.data(), flag.data(), spec_.run.data(), nullptr};

  SpawnActions fa;
  posix_spawn_file_actions_adddup2(&fa.actions, devnull.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa.actions, out_w.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa.actions, err_w.get(), STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&fa.actions, workdir_.c_str());
  SpawnAttr attr;
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr.attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr.attr, &none);
  posix_spawnattr_setsigdefault(&attr.attr, &all);

  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, bash.c_str(), &fa.actions, &attr.attr, argv.data(), envp.data());
  const int64_t start_time_ns = WallClockNs();
  for (auto& s : env_strings) std::fill(s.begin(), s.end(), '\0');
  if (rc != 0) {
    throw AgentError(ErrorKind::kInternal,
                     "spawn /bin/bash in " + workdir_.string() + ": " + ErrnoText(rc));
  }
  out_w.reset();
  err_w.reset();
  spec_.env.clear();

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
  pump_ = std::thread(&Job::Pump, this, std::move(out_r), std::move(err_r));
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
    ExitStatus exit;
    exit.end_time_ns = WallClockNs();
    exit.stopped_by_request = true;
    exit.never_started = true;
    dir_.WriteExitStatus(exit);
    exit_ = exit;
    state_ = JobState::kStopped;
    spec_.env.clear();
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
  jobs_.clear();  // each Job kills its running group and joins its threads
}

PrepareResult JobRunner::Prepare(JobSpec spec) {
  Validate(spec);
  std::filesystem::path workdir = ResolveWorkdir(spec.workdir);
  JobDir dir(home_, spec.job_id, spec.attempt);
  const std::string key = Key(spec.job_id, spec.attempt);
  std::lock_guard lock(mu_);
  if (auto it = jobs_.find(key); it != jobs_.end()) {
    if (it->second->Snapshot().state != JobState::kPrepared) {
      throw AgentError(ErrorKind::kFailedPrecondition,
                       "job " + key + " has already been started or stopped on this worker");
    }
  } else if (dir.ReadPid() || dir.ReadExitStatus()) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "job " + key + " already ran on this worker (under an earlier agent)");
  }
  try {
    dir.Create();
    dir.WriteWorkerId(spec.worker_id);
  } catch (const std::exception& e) {
    throw AgentError(ErrorKind::kFailedPrecondition, "job directory: " + std::string(e.what()));
  }
  jobs_[key] = std::make_shared<Job>(std::move(spec), dir, workdir);
  return {workdir, dir.path()};
}

std::shared_ptr<Job> JobRunner::Find(const std::string& job_id, uint32_t attempt) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(Key(job_id, attempt));
  return it == jobs_.end() ? nullptr : it->second;
}

StartResult JobRunner::Start(const std::string& job_id, uint32_t attempt) {
  auto job = Find(job_id, attempt);
  if (!job) {
    throw AgentError(ErrorKind::kNotFound,
                     "job " + Key(job_id, attempt) +
                         " is not prepared on this agent (was the agent restarted?)");
  }
  return job->Start();
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
