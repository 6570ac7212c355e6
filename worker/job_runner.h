// Process supervision on a worker: runs a job attempt's script with /bin/bash -lc in its own
// process group (and session), writes its stdout/stderr as sequenced records to the job's
// log file, records how it ended (job_dir.h), and stops it: SIGTERM to the group, SIGKILL
// after the grace period.
//
// Two-phase start, so that the workers of a pod start together: Prepare forks the job's
// process already (new session, signals reset, stdin /dev/null, stdout/stderr to the log
// pipes) and leaves it blocked on a "go" socket; Start waits for the scheduled instant and
// only writes one byte to it, and the process then changes to the workdir and execs
// /bin/bash. The start time is taken right after that write. A process that sees end-of-file
// instead (the attempt was stopped or replaced before its start, or the agent went away) exits
// without running anything.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "proto/unique_fd.h"
#include "worker/job_dir.h"

namespace podrun::agent {

// What Prepare needs to know about a job attempt.
struct JobSpec {
  std::string job_id;
  uint32_t attempt = 1;
  uint32_t worker_id = 0;
  std::string workdir;  // "~", "~/x", relative (to $HOME) or absolute; created if missing
  std::map<std::string, std::string> env;  // added to the agent's environment; in memory only
  std::string run;                         // script text for /bin/bash -lc
  std::chrono::seconds grace_period{10};   // used when the agent itself stops the job
};

enum class JobState { kUnknown, kPrepared, kRunning, kExited, kStopped };

struct JobSnapshot {
  JobState state = JobState::kUnknown;
  pid_t pid = 0;  // also the process group id; 0 before Start
  int64_t start_time_ns = 0;
  uint32_t worker_id = 0;
  uint64_t last_seq = 0;           // last record written to the log
  std::optional<ExitStatus> exit;  // set once the job has ended (kExited or kStopped)
};

struct PrepareResult {
  std::filesystem::path workdir;  // absolute, exists
  std::filesystem::path job_dir;
};

struct StartResult {
  pid_t pid = 0;
  int64_t start_time_ns = 0;     // wall clock right after the process was released
  bool already_started = false;  // an earlier Start of this attempt released it
};

struct StopResult {
  bool was_running = false;
  bool killed = false;  // SIGKILL was needed
  ExitStatus exit;
};

// One job attempt known to this agent process. Created by JobRunner::Prepare; shared with
// the RPCs that follow its log. Every method is thread-safe.
class Job {
 public:
  // Forks the job's process, which waits for Start (see the top of this file); returns once
  // it is ready. The job's env is in memory only until then. Throws AgentError.
  Job(JobSpec spec, JobDir dir, std::filesystem::path workdir);
  // Ends a waiting process, kills a still running process group (SIGKILL) and joins the
  // supervising threads.
  ~Job();
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  // Waits until the wall clock reads `start_at_ns` (at once if that is past, or more than
  // 10 s ahead: a clock mix-up must not hold a job back), without holding the job (a Stop
  // meanwhile wins), and where the agent may, with a real-time priority (see the .cc); then
  // releases the waiting process (once; later calls return the first result) and waits until
  // it has exec'd /bin/bash. If it could not (the workdir is gone, no /bin/bash, ...), the
  // attempt ends at once with the process's exit code (127) and the reason on its stderr, and
  // this and every later call throw AgentError with the reason.
  StartResult Start(int64_t start_at_ns = 0);
  // SIGTERM to the group, SIGKILL after `grace`; returns once no process of the group
  // remains. A prepared job becomes stopped without running, and its waiting process is
  // gone on return. Throws AgentError.
  StopResult Stop(std::chrono::seconds grace);
  // For a prepared job: ends its waiting process without recording anything (the job was
  // replaced, or the agent is going away); a later Start throws. Otherwise does nothing.
  void Discard();
  // The waiting process of a prepared job, else 0.
  pid_t waiting_pid() const;

  JobSnapshot Snapshot() const;
  // Blocks until a record after `seen_seq` is in the log, the job has ended, or `deadline`.
  void WaitForProgress(uint64_t seen_seq, std::chrono::steady_clock::time_point deadline) const;

  const JobDir& dir() const { return dir_; }
  std::chrono::seconds grace_period() const { return grace_period_; }

 private:
  void Reap();                            // thread: waits for the leader, signals the pump
  void Pump(UniqueFd out, UniqueFd err);  // thread: pipes → log records, then Finalize()
  void AppendChunk(uint64_t seq, uint8_t stream, std::string_view data);
  void Finalize();
  // Closes the go socket and reaps the waiting process, if any. Needs mu_.
  void EndWaitingProcess();
  // Start's checks: throws if the job cannot start, returns the result if it has started,
  // nullopt if it can start now. Needs mu_.
  std::optional<StartResult> CheckStart() const;
  // End of a requested stop's grace period; time_point::min() if no stop was requested.
  std::chrono::steady_clock::time_point StopDeadline() const;

  const JobDir dir_;
  const std::filesystem::path workdir_;
  const std::chrono::seconds grace_period_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // notified on every record and when the job ends
  JobSpec spec_;                        // env cleared once the process is forked
  JobState state_ = JobState::kPrepared;
  // The prepared process, blocked until it reads a byte from `go_` (its peer), and the read
  // ends of its stdout/stderr pipes; handed over to pid_ and the pump by Start.
  pid_t waiting_pid_ = 0;
  UniqueFd go_;
  UniqueFd out_r_, err_r_;
  std::string start_error_;  // why Start failed, once it has
  pid_t pid_ = 0;
  int64_t start_time_ns_ = 0;
  uint64_t last_seq_ = 0;
  std::optional<int> wait_status_;  // the leader's waitpid() status once reaped
  int64_t reaped_time_ns_ = 0;
  bool stop_requested_ = false;
  std::chrono::steady_clock::time_point stop_deadline_;  // end of a requested stop's grace
  std::optional<ExitStatus> exit_;

  UniqueFd log_fd_;        // written only by the pump thread
  UniqueFd reaped_event_;  // eventfd: the reaper tells the pump that the leader is gone
  std::thread reaper_;
  std::thread pump_;
};

// The jobs of this agent process, by (job_id, attempt), on top of the job directories under
// `home`. Thread-safe.
class JobRunner {
 public:
  explicit JobRunner(std::filesystem::path home);
  // Ends the waiting processes of prepared jobs, kills the process groups of running jobs
  // (SIGKILL) and waits for them.
  ~JobRunner();

  // Validates the spec, creates the workdir and the job directory, and forks the job's
  // process, which waits for Start. Re-preparing a prepared (not started) attempt replaces it
  // (and ends the replaced one's waiting process). Throws AgentError.
  PrepareResult Prepare(JobSpec spec);
  // Starts a prepared attempt at `start_at_ns` (see Job::Start). Throws AgentError (kNotFound
  // if it was not prepared here).
  StartResult Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns = 0);
  // Stops an attempt (see Job::Stop); attempts of earlier agents are read from disk, and a
  // process group they left behind is stopped too. Throws AgentError.
  StopResult Stop(const std::string& job_id, uint32_t attempt, std::chrono::seconds grace);
  // The attempt's state, from memory or, for an earlier agent's attempt, from its directory.
  // Throws AgentError (kNotFound).
  JobSnapshot Status(const std::string& job_id, uint32_t attempt) const;
  // The attempt if this agent process prepared it, else null.
  std::shared_ptr<Job> Find(const std::string& job_id, uint32_t attempt) const;
  // Jobs whose process is running now.
  int RunningJobs() const;
  // Stops every running job, each with its own grace period (for a forced shutdown).
  void StopAll();

  const std::filesystem::path& home() const { return home_; }

 private:
  const std::filesystem::path home_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Job>> jobs_;  // key: "<job_id>/<attempt>"
};

// Wall clock now, in ns since the epoch.
int64_t WallClockNs();

// The user's home: $HOME, else the user's entry in /etc/passwd, else "/".
std::filesystem::path UserHome();

// "~", "~/x" and relative paths resolve under $HOME; the directory is created if missing.
// Returns the absolute, canonical path. Throws AgentError.
std::filesystem::path ResolveWorkdir(const std::string& workdir);

}  // namespace podrun::agent
