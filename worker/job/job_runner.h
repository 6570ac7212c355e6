// Job attempts on a worker, as the agent sees them. Each job's process is held by a per-job
// supervisor (supervisor.h), not by the agent: the agent starts supervisors, releases their
// prepared processes at the lockstep instant, asks them to stop, and reads the job's files
// (job_state.h), so an agent that crashes or is replaced never touches a running job, and a
// new agent adopts running jobs by reading their directories.
//
// Two-phase start, so that the workers of a pod start together: Prepare starts the supervisor,
// which forks the job's process already (prepared_child.h), blocked on a "go" socket whose
// other end this agent holds; Start waits for the scheduled instant and only writes one byte to
// it. The start time is taken right after that write.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "proto/unique_fd.h"
#include "worker/base/wall_clock.h"
#include "worker/job/workdir.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"

namespace podrun::agent {

// What Prepare needs to know about a job attempt.
struct JobRequest {
  std::string job_id;
  uint32_t attempt = 1;
  uint32_t worker_id = 0;
  std::string workdir;  // "~", "~/x", relative (to $HOME) or absolute; created if missing
  std::map<std::string, std::string> env;  // added to the agent's environment; in memory only
  std::string run;                         // script text for /bin/bash -lc
  std::chrono::seconds grace_period{10};   // used when the agent itself stops the job
  std::string progress;  // the spec's progress pattern ("" : none), for the supervisor
};

struct PrepareResult {
  std::filesystem::path workdir;  // absolute, exists
  std::filesystem::path job_dir;
};

struct StartResult {
  pid_t pid = 0;
  int64_t start_time_ns = 0;     // wall clock right after the process was released
  bool already_started = false;  // an earlier Start of this attempt released it
  // Wall clock when this Start, checked and its confirmation window set, began to wait for its
  // instant: after the instant, it was late and released the process at once.
  int64_t received_ns = 0;
};

struct StopResult {
  bool was_running = false;
  bool killed = false;  // SIGKILL was needed
  ProcessEnd exit;
};

// One job attempt prepared by this agent process: holds the go socket of its prepared process
// until Start. Every method is thread-safe, and none holds the job's lock across a blocking call.
class Job {
 public:
  // Starts the job's supervisor, whose process then waits for Start; returns once it does.
  // The job's env is in memory only until then. Throws AgentError.
  Job(JobRequest spec, JobDir dir, std::filesystem::path workdir, const std::filesystem::path& home,
      const std::filesystem::path& supervisor_binary);
  // A prepared process ends without running (its supervisor records "never started").
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Waits until the wall clock reads `start_at_ns` (at once if that is past, or more than
  // 10 s ahead: a clock mix-up must not hold a job back), without holding the job (a Stop
  // meanwhile wins), and where the agent may, with a real-time priority (see the .cc); then
  // releases the waiting login shell (once; later calls return the first result) and waits
  // until it has closed its go socket to run the run (its workdir and its exec were done at
  // Prepare, which fails if they cannot be: prepared_child.h). If the process had ended, this
  // and every later call throw AgentError with the reason.
  // `confirm_within` > 0: before anything waits, the job's supervisor is told that the start
  // must be confirmed (JobRunner::Confirm) within that long of the release, else it stops the
  // job with the grace period (worker/supervisor/start_confirmation.h); a supervisor that does
  // not take it fails the Start (AgentError), the process still prepared.
  StartResult Start(int64_t start_at_ns = 0,
                    std::chrono::milliseconds confirm_within = std::chrono::milliseconds(0));
  // Ends the prepared process without running it; `replaced`: its supervisor records nothing
  // (a new Prepare of the attempt follows) and is gone on return. Otherwise does nothing.
  // Throws AgentError (only when `replaced`) if the supervisor did not take the request and so
  // records the attempt as never started: the attempt cannot be prepared again.
  void Discard(bool replaced);
  // True until Start released the process or Discard/Stop ended it.
  bool prepared() const;
  // The waiting process of a prepared job, else 0.
  pid_t waiting_pid() const;
  // True while a Start waits for its instant (a Stop meanwhile wins).
  bool starting() const;

  JobSnapshot Snapshot() const { return ReadJobSnapshot(dir_); }
  // Blocks until a record after `seen_seq` is in the log, the job has ended, or `deadline`.
  void WaitForProgress(uint64_t seen_seq, std::chrono::steady_clock::time_point deadline) const;

  const JobDir& dir() const { return dir_; }
  std::chrono::seconds grace_period() const { return grace_period_; }

 private:
  const JobDir dir_;
  const std::filesystem::path workdir_;
  const std::filesystem::path home_;
  const std::chrono::seconds grace_period_;

  mutable std::mutex mu_;  // never held while the job's directory is read or written
  UniqueFd go_;            // until Start or Discard
  pid_t job_pid_ = 0;      // the prepared (then running) process
  bool starting_ = false;
  std::optional<StartResult> started_;
  std::string start_error_;  // why Start failed, once it has
};

// The jobs of this agent, by (job_id, attempt), on top of the job directories under `home`.
// Thread-safe.
class JobRunner {
 public:
  // `supervisor_binary`: the podrun-agent to run as `supervise` (the agent's /proc/self/exe).
  JobRunner(std::filesystem::path home, std::filesystem::path supervisor_binary);
  // Ends the waiting processes of prepared jobs. Running jobs go on under their supervisors.
  ~JobRunner();

  // Validates the spec, creates the workdir and the job directory, and starts the job's
  // supervisor, whose process waits for Start. Re-preparing a prepared (not started) attempt
  // replaces it. Throws AgentError.
  PrepareResult Prepare(JobRequest spec);
  // Starts a prepared attempt at `start_at_ns`, to be confirmed within `confirm_within` (see
  // Job::Start). Throws AgentError (kNotFound if it was not prepared by this agent process).
  StartResult Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns = 0,
                    std::chrono::milliseconds confirm_within = std::chrono::milliseconds(0));
  // Confirms the gang's start of an attempt, this agent's or an earlier one's (its supervisor
  // keeps the window): from now on it is never stopped for want of a confirmation. Returns true
  // if the job had already ended by itself (nothing left to confirm). Throws AgentError:
  // kFailedPrecondition when the window had passed (the job was stopped for it) or the attempt
  // was never started here, kNotFound for no such attempt.
  bool Confirm(const std::string& job_id, uint32_t attempt);
  // Stops an attempt, this agent's or an earlier one's: SIGTERM to its group, SIGKILL after
  // `grace`, through its supervisor (directly, checking the process's identity, if the
  // supervisor is gone); returns once the outcome is recorded. Throws AgentError.
  StopResult Stop(const std::string& job_id, uint32_t attempt, std::chrono::seconds grace);
  // The attempt's state, from its files (see ReadJobSnapshot). Throws AgentError (kNotFound).
  JobSnapshot Status(const std::string& job_id, uint32_t attempt, bool count_records = true) const;
  // The attempt if this agent process prepared it, else null.
  std::shared_ptr<Job> Find(const std::string& job_id, uint32_t attempt) const;
  // Jobs prepared by this agent process whose process is running now.
  int RunningJobs() const;
  // Stops every running job of this agent process, each with its own grace period.
  void StopAll();

  const std::filesystem::path& home() const { return home_; }

 private:
  const std::filesystem::path home_;
  const std::filesystem::path supervisor_binary_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;  // key: "<job_id>/<attempt>"
};

}  // namespace podrun::agent
