// Preparing, starting, supervising and stopping job processes (see job_runner.h).
#include "worker/job/job_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "proto/log_record.h"
#include "proto/private_state.h"
#include "proto/progress_pattern.h"
#include "proto/protocol_version.h"
#include "worker/base/agent_error.h"
#include "worker/job/realtime_while_starting.h"
#include "worker/job/start_confirm.h"
#include "worker/job/supervisor_client.h"
#include "worker/supervisor/prepared_child.h"
#include "worker/supervisor/supervisor_control.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

// How long Stop waits, beyond the grace period, for the supervisor to record the outcome.
constexpr auto kOutcomeWait = std::chrono::seconds(40);
// How long a discarded prepared job's supervisor takes to record "never started" (or exit).
constexpr auto kDiscardWait = std::chrono::seconds(5);
// How long a failed Start waits for the supervisor to record the outcome.
constexpr auto kFailedStartWait = std::chrono::seconds(10);
constexpr auto kAskTimeout = std::chrono::milliseconds(3000);
constexpr auto kPollInterval = std::chrono::milliseconds(200);

// Waits until `done()` or the deadline, woken by changes in the job's directory.
template <typename Done>
bool WaitFor(const JobDir& dir, Clock::time_point deadline, Done&& done) {
  JobDirWatch watch(dir);
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    watch.Wait(std::min(deadline, Clock::now() + kPollInterval));
  }
  return true;
}

std::string Key(const std::string& job_id, uint32_t attempt) {
  return job_id + "/" + std::to_string(attempt);
}

void Validate(const JobRequest& spec) {
  if (!IsValidJobId(spec.job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "job id \"" + spec.job_id + "\": use 1-128 of [A-Za-z0-9._-]");
  }
  if (spec.attempt == 0) throw AgentError(ErrorKind::kInvalidArgument, "attempt must be >= 1");
  if (spec.run.empty()) throw AgentError(ErrorKind::kInvalidArgument, "run is empty");
  if (spec.run.find('\0') != std::string::npos) {
    throw AgentError(ErrorKind::kInvalidArgument, "run contains a NUL byte");
  }
  try {
    ProgressPattern check(spec.progress);
  } catch (const std::invalid_argument& e) {
    throw AgentError(ErrorKind::kInvalidArgument, "progress pattern: " + std::string(e.what()));
  }
  for (const auto& [key, value] : spec.env) {
    if (key.empty() || key.find_first_of(std::string("=\0", 2)) != std::string::npos ||
        value.find('\0') != std::string::npos) {
      throw AgentError(ErrorKind::kInvalidArgument, "env: bad variable name \"" + key + "\"");
    }
  }
}

// Sleeps until the wall clock reads `at_ns`; returns at once if that is past or absurdly far
// (more than kMaxStartDelay ahead, proto/protocol_version.h).
void WaitUntilWallClock(int64_t at_ns) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t now_ns = int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
  if (at_ns <= now_ns || at_ns - now_ns > std::chrono::nanoseconds(kMaxStartDelay).count()) return;
  timespec at{static_cast<time_t>(at_ns / 1000000000), static_cast<long>(at_ns % 1000000000)};
  while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &at, nullptr) == EINTR) {
  }
}

}  // namespace

// ---- Job --------------------------------------------------------------------------------------

Job::Job(JobRequest spec, JobDir dir, std::filesystem::path workdir,
         const std::filesystem::path& home, const std::filesystem::path& supervisor_binary)
    : dir_(std::move(dir)),
      workdir_(std::move(workdir)),
      home_(home),
      grace_period_(spec.grace_period) {
  SupervisorLaunch launch{supervisor_binary, home,     spec.job_id,   spec.attempt,
                          workdir_,          spec.run, spec.progress, std::move(spec.env)};
  for (auto& [key, value] : spec.env) ::explicit_bzero(value.data(), value.size());
  try {
    SpawnedSupervisor spawned = SpawnSupervisor(launch);
    go_ = std::move(spawned.go);
    job_pid_ = spawned.job_pid;
  } catch (const std::exception& e) {
    throw AgentError(ErrorKind::kInternal, e.what());
  }
}

Job::~Job() {
  if (prepared()) Discard(false);
}

bool Job::prepared() const {
  std::lock_guard lock(mu_);
  return go_.valid();
}

bool Job::starting() const {
  std::lock_guard lock(mu_);
  return starting_;
}

pid_t Job::waiting_pid() const {
  std::lock_guard lock(mu_);
  return go_ ? job_pid_ : 0;
}

void Job::Discard(bool replaced) {
  const auto supervisor = dir_.ReadSupervisor();
  // Replaced, the supervisor must record nothing: its "never started" would be the new one's.
  const bool discarded =
      !replaced || !supervisor ||
      AskSupervisor(home_, supervisor->pid, std::string(kDiscardRequest), kAskTimeout) == kOkReply;
  {
    std::lock_guard lock(mu_);
    if (!go_) return;
    go_.reset();  // end-of-file: the process exits without running anything
  }
  const auto deadline = Clock::now() + kDiscardWait;
  const long long wait_s = std::chrono::seconds(kDiscardWait).count();
  if (!replaced) {
    if (!WaitFor(dir_, deadline, [&] { return dir_.ReadProcessEnd().has_value(); })) {
      std::fprintf(stderr, "podrun-agent: %s: no outcome recorded %lld s after discarding it\n",
                   dir_.path().c_str(), wait_s);
    }
    return;
  }
  const bool gone = WaitFor(dir_, deadline, [&] { return !supervisor || !supervisor->Alive(); });
  if (!discarded && (!gone || dir_.ReadProcessEnd())) {
    throw AgentError(ErrorKind::kInternal,
                     dir_.path().string() + ": the supervisor (pid " +
                         std::to_string(supervisor->pid) +
                         ") of the replaced preparation did not take DISCARD, so it records this "
                         "attempt as never started; prepare another attempt");
  }
  if (!gone) {
    std::fprintf(stderr, "podrun-agent: %s: replaced supervisor (pid %d) still runs %lld s on\n",
                 dir_.path().c_str(), supervisor->pid, wait_s);
  }
}

StartResult Job::Start(int64_t start_at_ns, std::chrono::milliseconds confirm_within) {
  bool gone = false;
  {
    std::lock_guard lock(mu_);
    if (!start_error_.empty()) throw AgentError(ErrorKind::kInternal, start_error_);
    if (started_) {
      StartResult again = *started_;
      again.already_started = true;
      return again;
    }
    gone = !go_;
    if (!gone) {
      if (starting_) throw AgentError(ErrorKind::kFailedPrecondition, "it is being started");
      starting_ = true;
    }
  }
  if (!gone && confirm_within.count() > 0) {
    try {  // before GO, so that no job runs that would not stop itself unconfirmed
      RequireConfirmation(home_, dir_, confirm_within, grace_period_);
    } catch (...) {
      std::lock_guard lock(mu_);
      starting_ = false;
      throw;
    }
  }
  if (gone) {  // the job's directory is read without the lock
    throw AgentError(ErrorKind::kFailedPrecondition,
                     dir_.ReadProcessEnd() ? "it was stopped before it started"
                                           : "its prepared process is gone (replaced, or the "
                                             "agent is exiting)");
  }
  RealtimeWhileStarting realtime;
  const int64_t ready_ns = WallClockNs();
  WaitUntilWallClock(start_at_ns);
  UniqueFd go;
  {
    std::lock_guard lock(mu_);
    starting_ = false;
    if (!go_) {  // a Stop meanwhile wins
      throw AgentError(ErrorKind::kFailedPrecondition, "it was stopped before it started");
    }
    go = std::move(go_);
  }
  // GO: the process was forked, set up and waiting since Prepare.
  const char byte = 1;
  ssize_t sent;
  while ((sent = ::send(go.get(), &byte, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
  }
  const int64_t start_time_ns = WallClockNs();
  realtime.Drop();
  // End-of-file once the shell, woken, closed it and runs the run (the chdir and the exec of
  // the shell were done at Prepare: prepared_child.h). Not under the lock.
  ChildReport report;
  const bool failed = sent != 1 || ReadReport(go.get(), &report);
  go.reset();
  if (!failed) std::this_thread::sleep_for(kQuietAfterStart);
  if (failed) {
    const std::string why = sent != 1 ? "its prepared process had ended"
                                      : "cannot run " + std::string(kShell) + " in " +
                                            workdir_.string() + ": " + DescribeReport(report);
    if (!WaitFor(dir_, Clock::now() + kFailedStartWait,
                 [&] { return dir_.ReadProcessEnd().has_value(); })) {
      std::fprintf(stderr, "podrun-agent: %s: no outcome recorded %lld s after a failed start\n",
                   dir_.path().c_str(),
                   static_cast<long long>(std::chrono::seconds(kFailedStartWait).count()));
    }
    std::lock_guard lock(mu_);
    start_error_ = why;
    throw AgentError(ErrorKind::kInternal, why);
  }
  try {
    dir_.WriteStarted(job_pid_, start_time_ns);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "podrun-agent: %s: %s\n", dir_.path().c_str(), e.what());
  }
  std::lock_guard lock(mu_);
  started_ = StartResult{job_pid_, start_time_ns, false, ready_ns};
  return *started_;
}

void Job::WaitForProgress(uint64_t seen_seq, Clock::time_point deadline) const {
  WaitFor(dir_, deadline, [&] {
    return dir_.ReadProcessEnd().has_value() || LastSeqInLog(dir_.log_path()) > seen_seq;
  });
}

// ---- JobRunner --------------------------------------------------------------------------------

JobRunner::JobRunner(std::filesystem::path home, std::filesystem::path supervisor_binary)
    : home_(std::move(home)), supervisor_binary_(std::move(supervisor_binary)) {}

JobRunner::~JobRunner() {
  std::map<std::string, std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    jobs.swap(jobs_);
  }
  for (auto& [key, job] : jobs) {
    if (job->prepared()) job->Discard(false);
  }
}

PrepareResult JobRunner::Prepare(JobRequest spec) {
  Validate(spec);
  std::filesystem::path workdir = ResolveWorkdir(spec.workdir);
  JobDir dir(home_, spec.job_id, spec.attempt);
  const std::string key = Key(spec.job_id, spec.attempt);
  std::shared_ptr<Job> replaced;
  {
    std::lock_guard lock(mu_);
    if (auto it = jobs_.find(key); it != jobs_.end()) {
      if (!it->second->prepared()) {
        throw AgentError(ErrorKind::kFailedPrecondition,
                         "job " + key + " has already been started or stopped on this worker");
      }
      replaced = it->second;
      jobs_.erase(it);
    }
  }
  // Not under the lock: the job's directory may be slow, and every RPC needs the lock.
  if (!replaced && (dir.ReadPid() || dir.ReadProcessEnd() || dir.ReadSupervisor())) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "job " + key + " already ran on this worker (under an earlier agent)");
  }
  if (replaced) replaced->Discard(true);
  try {
    dir.Create();
    dir.WriteWorkerId(spec.worker_id);
    // Where supervisors listen (serve.cc makes it too; a runner on its own needs it here).
    const std::filesystem::path run = home_ / "run";
    if (!std::filesystem::is_directory(run)) {
      std::filesystem::create_directories(run);
      std::filesystem::permissions(run, std::filesystem::perms::owner_all);
    }
  } catch (const std::exception& e) {
    // Nothing half-written stays behind (a full disk is the usual cause): the attempt's
    // directory goes, so a later Stop or Status finds no job rather than one that never ends.
    std::error_code ignored;
    std::filesystem::remove_all(dir.path(), ignored);
    throw AgentError(ErrorKind::kFailedPrecondition, "job directory: " + std::string(e.what()));
  }
  // Starts the supervisor and waits for the process to be ready: not under the lock.
  auto job = std::make_shared<Job>(std::move(spec), dir, workdir, home_, supervisor_binary_);
  {
    std::lock_guard lock(mu_);
    if (jobs_.count(key)) {  // a concurrent Prepare of the same attempt won; ours goes
      throw AgentError(ErrorKind::kFailedPrecondition, "job " + key + " is being prepared twice");
    }
    jobs_[key] = job;
  }
  return {workdir, dir.path()};
}

std::shared_ptr<Job> JobRunner::Find(const std::string& job_id, uint32_t attempt) const {
  std::lock_guard lock(mu_);
  auto it = jobs_.find(Key(job_id, attempt));
  return it == jobs_.end() ? nullptr : it->second;
}

StartResult JobRunner::Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns,
                             std::chrono::milliseconds confirm_within) {
  auto job = Find(job_id, attempt);
  if (!job) {
    throw AgentError(ErrorKind::kNotFound,
                     "job " + Key(job_id, attempt) +
                         " is not prepared on this agent (was the agent restarted?)");
  }
  return job->Start(start_at_ns, confirm_within);
}

bool JobRunner::Confirm(const std::string& job_id, uint32_t attempt) {
  const JobSnapshot snap = Status(job_id, attempt, false);
  return ConfirmStart(home_, JobDir(home_, job_id, attempt), snap);
}

JobSnapshot JobRunner::Status(const std::string& job_id, uint32_t attempt,
                              bool count_records) const {
  if (!IsValidJobId(job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument, "bad job id \"" + job_id + "\"");
  }
  JobDir dir(home_, job_id, attempt);
  if (!dir.Exists()) {
    throw AgentError(ErrorKind::kNotFound, "no job " + Key(job_id, attempt) + " on this worker");
  }
  return ReadJobSnapshot(dir, count_records);
}

StopResult JobRunner::Stop(const std::string& job_id, uint32_t attempt,
                           std::chrono::seconds grace) {
  const JobSnapshot snap = Status(job_id, attempt, false);  // records a lost job as lost
  if (snap.exit) return {false, false, *snap.exit};
  const JobDir dir(home_, job_id, attempt);
  const std::string request = StopRequest(grace);
  const bool asked = snap.supervisor_pid > 0 &&
                     AskSupervisor(home_, snap.supervisor_pid, request, kAskTimeout) == kOkReply;
  auto job = Find(job_id, attempt);
  if (!job && snap.supervisor_pid <= 0 && !dir.ReadJobProcess()) {
    // Its directory is there but nothing was ever started for it (its Prepare failed, or an
    // earlier agent died while preparing): no outcome will come, so do not wait for one.
    throw AgentError(ErrorKind::kNotFound,
                     "job " + Key(job_id, attempt) + " was never started on this worker");
  }
  if (job && job->prepared()) job->Discard(false);  // it ends without running
  if (!asked) {
    // No supervisor answers: stop the job's group directly, by its identity, and look again.
    if (auto leader = dir.ReadJobProcess()) {
      SignalGroup(*leader, SIGTERM);
      if (!WaitFor(dir, Clock::now() + grace, [&] { return GroupMembersSince(*leader).empty(); })) {
        SignalGroup(*leader, SIGKILL);
      }
    }
  }
  std::optional<ProcessEnd> exit;
  const bool ended = WaitFor(dir, Clock::now() + grace + kOutcomeWait, [&] {
    exit = ReadJobSnapshot(dir, false).exit;  // a supervisor that vanishes meanwhile makes it lost
    return exit.has_value();
  });
  if (!ended) {
    throw AgentError(ErrorKind::kInternal,
                     "job " + Key(job_id, attempt) + ": no outcome recorded " +
                         std::to_string((grace + kOutcomeWait).count()) + " s after SIGTERM");
  }
  return {snap.state == JobState::kRunning, exit->killed || exit->signal == SIGKILL, *exit};
}

int JobRunner::RunningJobs() const {
  std::vector<std::shared_ptr<Job>> jobs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, job] : jobs_) jobs.push_back(job);
  }
  int running = 0;  // the job directories are read without the lock
  for (const auto& job : jobs) {
    running += !job->prepared() && job->dir().ReadPid() && !job->dir().ReadProcessEnd();
  }
  return running;
}

void JobRunner::StopAll() {
  std::vector<std::pair<std::string, std::shared_ptr<Job>>> jobs;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, job] : jobs_) jobs.emplace_back(key, job);
  }
  for (auto& [key, job] : jobs) {
    const auto slash = key.rfind('/');
    try {
      Stop(key.substr(0, slash), static_cast<uint32_t>(std::stoul(key.substr(slash + 1))),
           job->grace_period());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "podrun-agent: stop %s: %s\n", key.c_str(), e.what());
    }
  }
}

}  // namespace podrun::agent
