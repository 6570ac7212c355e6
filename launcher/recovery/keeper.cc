// The keeper (see keeper.h).
#include "launcher/recovery/keeper.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "launcher/attempt/attempt_runner.h"
#include "launcher/base/open_files.h"
#include "launcher/connect/job_pod.h"
#include "launcher/connect/pod.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/pod/cloud_api_access.h"
#include "launcher/recovery/keeper_env.h"
#include "launcher/recovery/restarts.h"
#include "launcher/spec/spec.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recorded_spec.h"
#include "launcher/store/recovery_records.h"
#include "proto/process_identity.h"
#include "proto/spawn.h"
#include "proto/unique_fd.h"

extern char** environ;

namespace podrun {
namespace {

constexpr auto kHeartbeat = std::chrono::seconds(10);
constexpr auto kSpawnWait = std::chrono::seconds(10);
// How long EndKeeper waits for the keeper to end (a recovery given up deletes a queued resource).
constexpr auto kEndKeeperWait = std::chrono::minutes(2);

// How long this machine has slept since it booted: CLOCK_BOOTTIME counts suspended time,
// CLOCK_MONOTONIC (which every timer of podrun's uses) does not.
int64_t SleptNs() {
  timespec boot{}, mono{};
  ::clock_gettime(CLOCK_BOOTTIME, &boot);
  ::clock_gettime(CLOCK_MONOTONIC, &mono);
  return (boot.tv_sec - mono.tv_sec) * 1'000'000'000LL + (boot.tv_nsec - mono.tv_nsec);
}

// Writes the keeper's heartbeat into the store every kHeartbeat, through a connection of its own
// opened once (again after an error), until destroyed.
class Heartbeat {
 public:
  Heartbeat(const std::filesystem::path& db, std::string job_id)
      : thread_([this, db, job_id = std::move(job_id)](const std::stop_token& stop) {
          Beat(db, job_id, stop);
        }) {}
  ~Heartbeat() {
    thread_.request_stop();
    cv_.notify_all();
  }

 private:
  void Beat(const std::filesystem::path& db, const std::string& job_id,
            const std::stop_token& stop) {
    std::unique_lock lock(mutex_);
    int64_t slept = SleptNs();
    std::optional<JobStore> store;  // this thread's connection, kept from beat to beat
    for (;;) {
      (void)cv_.wait_for(lock, stop, kHeartbeat, [] { return false; });
      if (stop.stop_requested()) return;
      // After a sleep the monotonic timers resume where they were; the connections are found
      // dead by their keepalives and reconnected, and a worker still out of reach gets its TPU
      // node asked about afresh. Said, so that the keeper's log explains the gap.
      if (const int64_t now = SleptNs(); now - slept > 5'000'000'000LL) {
        Say(fmt::format(
            "this machine slept for {}: nobody watched the job meanwhile; watching again "
            "(broken connections are reconnected)",
            FormatDuration(now - slept)));
        slept = now;
      }
      try {
        if (!store) store.emplace(db);
        RecoveryRecords(*store).KeeperHeartbeat(job_id);
      } catch (const Error& e) {
        store.reset();  // opened afresh at the next beat
        Say(fmt::format("warning: keeper heartbeat: {}", e.what()));
      }
    }
  }

  std::mutex mutex_;
  std::condition_variable_any cv_;
  std::jthread thread_;  // last: stopped first
};

// The identity of the holder of the job's keeper lock, when it is the process the keeper
// recorded (same pid, start time and boot, on this host) and still alive.
std::optional<ProcessIdentity> IdentifiedKeeper(JobStore& store, const std::filesystem::path& home,
                                                const std::string& job_id) {
  const std::optional<int> holder = DriverHolder(home, job_id);
  // 0 (or less): a holder in another pid namespace, whose pid means nothing here.
  if (!holder || *holder <= 0) return std::nullopt;
  const std::optional<KeeperRecord> k = RecoveryRecords(store).GetKeeper(job_id);
  if (!k || k->host != ThisHostName()) return std::nullopt;
  const std::optional<ProcessIdentity> recorded = ProcessIdentity::Parse(k->identity);
  if (!recorded || recorded->pid != *holder || !recorded->Alive()) return std::nullopt;
  return recorded;
}

}  // namespace

std::optional<Keeper> Keeper::Acquire(const std::filesystem::path& home,
                                      const std::string& job_id) {
  std::optional<DriverLock> lock = DriverLock::TryAcquire(home, job_id, DriverRole::kKeeper);
  if (!lock) return std::nullopt;
  return Keeper(home, std::move(*lock), std::make_unique<KeeperSignals>());
}

ExitCode Keeper::Run(JobStore& store, const JobRecord& job) {
  RecoveryRecords records(store);
  const std::vector<AttemptRecord> attempts = store.Attempts(job.id);
  // A start that failed for a reason no restart mends (a bad spec, Ctrl-C) is not retried.
  const auto unmendable = [&](const AttemptRecord& a) {
    return a.state == AttemptState::kStartFailed &&
           !KeeperTakesOver(static_cast<ExitCode>(a.exit_code.value_or(1))) &&
           records.Recreations(job.id).empty();
  };
  if (attempts.empty() || attempts.back().state == AttemptState::kSucceeded ||
      attempts.back().state == AttemptState::kStopped || unmendable(attempts.back())) {
    Say(fmt::format("job {} has no attempt left to watch ({})", job.id,
                    attempts.empty() ? "none" : AttemptStateName(attempts.back().state)));
    return ExitCode::kOk;
  }
  const auto self = ProcessIdentity::Of(::getpid());
  records.SetKeeper(job.id, static_cast<int>(::getpid()), self ? self->ToString() : "",
                    ThisHostName());
  Say(fmt::format("keeper of job {}: pid {} on {}", job.id, ::getpid(), ThisHostName()));
  // Whatever ends it, the store says why (`status`: "keeper: ended ... (why)").
  try {
    const ExitCode code = Keep(store, job, attempts);
    const auto latest = store.LatestAttempt(job.id);
    records.EndKeeper(job.id, fmt::format("the job ended: {}",
                                          latest ? AttemptStateName(latest->state) : "no attempt"));
    return code;
  } catch (const std::exception& e) {
    records.EndKeeper(job.id, e.what());
    throw;
  } catch (...) {
    records.EndKeeper(job.id, "an unknown error");
    throw;
  }
}

ExitCode Keeper::Keep(JobStore& store, JobRecord job, const std::vector<AttemptRecord>& attempts) {
  // Its folder is /: an older store's relative spec path is never resolved here.
  RefuseRelativeSpecPath(job);
  std::optional<Heartbeat> heartbeat(std::in_place, store.path(), job.id);
  JobSpec spec = RecordedSpec(store, job);
  std::filesystem::path local_root;
  Pod pod = PodOfJob(job, &local_root);
  // A slice is read through Google's API with gcloud's token (launcher/pod/cloud_api_access.h):
  // asked for now, so that noticing the first preemption does not wait for gcloud's start-up.
  if (!PodSourcesOf(pod).empty()) GcloudApiAccess();
  const AttemptRecord& latest = attempts.back();
  pod.selected = latest.workers;
  EnsureOpenFiles(pod.selected.size());
  AttemptInputs inputs = ReadAttemptInputs(spec, job.env_overrides);
  AttemptPlan plan = MakeAttemptPlan(job, latest.number, spec, pod, home_, std::move(inputs),
                                     job.env_overrides, {});
  plan.resumed_from = latest.resumed_from;
  RestartOptions options{.follow_running = true,
                         .used = RecoveriesSince(attempts),
                         .wait = signals_->wait(),
                         .keeper_signals = signals_.get()};
  // An attempt that already ended without success (a detached start that failed, a preemption
  // during its preparation included; a failure while nobody watched) is not followed: it is
  // restarted as an attached launch would have restarted it. One whose node is being recreated
  // (its intent recorded) is followed: its recreation is finished first.
  const bool ended =
      latest.state == AttemptState::kFailed || (latest.state == AttemptState::kStartFailed &&
                                                RecoveryRecords(store).Recreations(job.id).empty());
  if (ended) {
    options.ended = static_cast<ExitCode>(latest.exit_code.value_or(1));
    Say(fmt::format("attempt {} of job {} already ended ({}): restarting it as restarts: says",
                    latest.number, job.id, AttemptStateName(latest.state)));
  }
  const ExitCode code = RunAttemptsWithRestarts(store, plan, options);
  heartbeat.reset();
  return code;
}

int SpawnKeeper(const std::filesystem::path& home, const std::string& job_id,
                const std::vector<std::string>& secret_names) {
  const std::filesystem::path log = JobDir(home, job_id) / "keeper.log";
  UniqueFd log_fd(
      ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (log_fd.get() < 0) {
    throw Error(ExitCode::kFailed, fmt::format("{}: {}", log.string(), std::strerror(errno)));
  }
  // A session of its own, default signal dispositions and an empty mask (proto/spawn.h).
  pid_t pid = 0;
  try {
    pid = SpawnProcess({.argv = {"podrun", "watch", job_id, "--foreground"},
                        .program = "/proc/self/exe",
                        .env = KeeperEnvironment(environ, secret_names),
                        .fds = {{STDIN_FILENO, kSpawnDevNull},
                                {STDOUT_FILENO, log_fd.get()},
                                {STDERR_FILENO, log_fd.get()}},
                        .group = SpawnGroup::kNewSession,
                        .cwd = "/",  // nothing of the launch's folder (RecordedSpec)
                        .umask = std::nullopt});
  } catch (const SpawnError& e) {
    throw Error(ExitCode::kFailed, fmt::format("cannot start the keeper: {}", e.what()));
  }
  const auto deadline = std::chrono::steady_clock::now() + kSpawnWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (DriverHolder(home, job_id) == pid) return pid;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      throw Error(ExitCode::kFailed,
                  fmt::format("the keeper of job {} ended at once (exit {}): see {}", job_id,
                              WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                              log.string()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw Error(ExitCode::kFailed,
              fmt::format("the keeper of job {} (pid {}) did not take its lock within {} s: see {}",
                          job_id, pid, kSpawnWait.count(), log.string()));
}

bool EndKeeper(JobStore& store, const std::filesystem::path& home, const std::string& job_id,
               const std::string& note) {
  const std::optional<ProcessIdentity> keeper = IdentifiedKeeper(store, home, job_id);
  if (!keeper) return false;
  // A pidfd names this very process: checked again once it is open, the pid cannot be recycled
  // under the signal.
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, keeper->pid, 0)));
  if (pidfd.get() < 0 || !keeper->Alive() ||
      ::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGTERM, nullptr, 0) != 0) {
    Say(fmt::format("warning: could not end the keeper of job {} (pid {}): {}", job_id, keeper->pid,
                    std::strerror(errno)));
    return false;
  }
  // A keeper in the middle of a recovery first undoes what it queued (keeper_signals.h): a
  // gcloud delete, which can take a while; a following one ends at once.
  const auto began = std::chrono::steady_clock::now();
  bool said = false;
  while (DriverHolder(home, job_id) && std::chrono::steady_clock::now() < began + kEndKeeperWait) {
    if (!said && std::chrono::steady_clock::now() > began + std::chrono::seconds(2)) {
      Say(
          fmt::format("waiting for the keeper of job {} (pid {}) to end: it gives up its "
                      "recovery (deleting what it queued)",
                      job_id, keeper->pid));
      said = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  RecoveryRecords(store).EndKeeper(job_id, note);
  Say(fmt::format("keeper of job {} (pid {}) ended", job_id, keeper->pid));
  return true;
}

}  // namespace podrun
