// AgentClient: the launcher's typed, blocking view of one podrun-agent (proto/agent.proto): its
// jobs' lifecycle and the worker's health. Reading a log is AgentLogReader's, code sync
// AgentSyncClient's, both on the same channel and reached through the client (`logs()`,
// `sync()`). It knows nothing of SSH: the caller makes the gRPC channel (a unix socket for
// --local, an fd bridged through SSH otherwise) and hands it over.
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_log_reader.h"
#include "launcher/agent_link/agent_refusal.h"
#include "launcher/agent_link/agent_sync_client.h"
#include "proto/process_end.h"

namespace podrun {

// The agent's answer to Hello.
struct AgentHello {
  uint32_t protocol_version = 0;
  std::string agent_version;
  std::string hostname;
  int pid = 0;
  std::string home;                              // the agent's directory, e.g. /home/u/.podrun
  std::string user_home;                         // $HOME on the worker
  std::vector<std::string> accelerator_devices;  // /dev/accel*, /dev/vfio/*
  int64_t now_ns = 0;                            // the worker's wall clock when it answered
  uint32_t running_jobs = 0;
  uint32_t idle_exit_seconds = 0;
  std::optional<int> tpu_worker_number;  // on a Cloud TPU VM: its TPU worker number
};

// The spec's mounts for one worker (proto's MountRequest).
struct AgentMountRequest {
  struct Entry {
    std::string type;        // nfs, gcsfuse, sshfs, bind
    int server_worker = -1;  // nfs: the exporting worker's index; -1: an outside server
    std::string server;      // nfs: its address as the workers reach it
    std::string export_path, bucket, source, path, options;
  };
  uint32_t worker_id = 0;
  std::vector<std::string> peer_addresses;  // every worker's internal address, by index
  std::vector<Entry> mounts;
};

struct AgentPrepareRequest {
  std::string job_id;
  uint32_t attempt = 1;
  uint32_t worker_id = 0;
  std::string workdir;                     // "~" and "~/x" expand on the worker
  std::map<std::string, std::string> env;  // may hold secrets: sent, never stored by the agent
  std::string run;
  uint32_t grace_seconds = 10;
  bool free_accelerators = false;  // end what holds the chips, remove a stale libtpu lockfile
  std::string setup_stamp;         // a setup attempt: skipped where the worker has this stamp
  bool force_setup = false;        // run the setup whatever the stamps say
  std::string progress;  // the spec's progress pattern ("" : none): the worker reads steps
};

struct AgentPrepareReply {
  std::string workdir;                           // resolved on the worker
  std::vector<std::string> accelerator_actions;  // what free_accelerators did
  bool setup_cached = false;                     // the stamp was there: nothing prepared
};

struct AgentStartReply {
  int pid = 0;
  int64_t start_time_ns = 0;     // worker wall clock right after the spawn
  bool already_started = false;  // a previous Start (e.g. before a reconnect) started it
  int64_t received_ns = 0;       // worker wall clock when the Start reached it (0: older agent)
};

enum class AgentJobState { kUnknown, kPrepared, kRunning, kExited, kStopped, kLost };

struct AgentJobStatus {
  AgentJobState state = AgentJobState::kUnknown;
  int pid = 0;
  int64_t start_time_ns = 0;
  uint64_t last_seq = 0;  // last record in the worker's log
  uint32_t worker_id = 0;
  std::optional<ProcessEnd> end;   // set once ended
  std::optional<AgentLogGap> gap;  // set when output could not be written to disk
};

// `podrun doctor`'s view of a worker (proto's InspectReply).
struct AgentInspection {
  std::vector<std::string> accelerator_devices;
  struct Holder {
    int pid = 0;
    std::string command, device;
  };
  std::vector<Holder> holders;                           // processes holding the accelerators
  bool lockfile_exists = false, lockfile_stale = false;  // /tmp/libtpu_lockfile
  uint64_t home_free_bytes = 0, tmp_free_bytes = 0;
  std::string login_ld_preload;          // "" if unset
  std::vector<std::string> fix_actions;  // with fix: what was done
};

// A worker printed `step` at `time_ns` (its own wall clock).
struct AgentStepPoint {
  int64_t time_ns = 0;
  int64_t step = 0;
};

// One attempt's steps as the worker's supervisor read them from the output (proto's StepRecord):
// the latest step, recent points for a rate (the last minute) and the thinned samples (at most
// 256 over the whole attempt). Times are the worker's wall clock.
struct AgentSteps {
  std::optional<int64_t> step;  // none seen yet
  int64_t step_ns = 0, first_step_ns = 0;
  std::vector<AgentStepPoint> recent, samples;
  int64_t now_ns = 0;  // the worker's wall clock when it answered
};

// `podrun top`'s sample of one worker's job attempt (proto's TopReply). Usage fields are zero
// unless the job runs; cpu_ns is cumulative (a rate needs two samples).
struct AgentTopSample {
  AgentJobState state = AgentJobState::kUnknown;
  int pid = 0;
  int64_t start_time_ns = 0;
  std::optional<ProcessEnd> end;    // set once ended
  int64_t now_ns = 0;               // the worker's wall clock
  int64_t sample_monotonic_ns = 0;  // the worker's monotonic clock when cpu_ns was read
  uint64_t cpu_ns = 0;
  uint64_t rss_bytes = 0;
  uint32_t processes = 0;
  std::vector<std::string> accelerators;
  uint64_t last_seq = 0;
  uint64_t output_bytes = 0;
  int64_t last_output_ns = 0;       // worker wall clock of the last output (0: none)
  std::string last_line;            // as printed: not necessarily UTF-8
  std::optional<AgentSteps> steps;  // the supervisor's step record, when it has one
};

// `podrun why`'s request to one worker (proto's WhyRequest).
struct AgentWhyRequest {
  int signal = 0;      // > 0: sent first to the job's processes that catch it
  bool stacks = true;  // a stack per process (py-spy, else gdb) where the worker can take one
  std::chrono::milliseconds cpu_window{1000};
  std::chrono::milliseconds stack_timeout{10000};
};

// A process's state (proto's ProcessState: /proc/<pid>/stat's letter).
enum class AgentProcessState {
  kUnknown,
  kRunning,
  kSleeping,
  kDiskWait,
  kStopped,
  kTracingStop,
  kZombie,
  kIdle,
  kDead
};

// "running", "sleeping", "disk wait", "stopped", "tracing stop", "zombie", "idle", "dead", "?".
const char* AgentProcessStateName(AgentProcessState state);

// One process of the job as `podrun why` sees it (proto's ProcessReport).
struct AgentProcessReport {
  int pid = 0, ppid = 0;
  std::string command;  // comm
  std::string cmdline;  // at most 256 bytes
  AgentProcessState state = AgentProcessState::kUnknown;
  std::string wchan;    // kernel wait channel ("" while running or unknown)
  std::string syscall;  // current system call ("" while running)
  double cpu_percent = 0;
  uint32_t threads = 0;
  int64_t started_ns = 0;
  bool signalled = false;
  std::string stack_tool;  // "py-spy", "gdb" or ""
  std::string stack;       // at most 16 KiB
  std::string stack_error;
};

// What one worker's job attempt is doing now (proto's WhyReply).
struct AgentWhyReport {
  AgentJobState state = AgentJobState::kUnknown;
  std::vector<AgentProcessReport> processes;  // the leader first
  int64_t now_ns = 0;                         // the worker's wall clock
  int64_t last_output_ns = 0;                 // 0: no output yet
  std::string last_line;
  std::string stack_note;           // said once per worker ("no py-spy or gdb on PATH")
  std::string signal_note;          // what the signal reached
  uint32_t processes_left_out = 0;  // the job's processes past the most one worker reports
  uint32_t gather_ms = 0;
};

struct AgentStopReply {
  bool was_running = false;
  bool killed = false;  // SIGKILL was needed after the grace period
  ProcessEnd end;
};

// One agent behind one channel. Every method blocks; each may be called from any thread,
// concurrently. Errors throw podrun::Error with ExitCode::kUnreachable and the message
// "agent <Rpc>: <gRPC code>: <detail>": AgentRefusal when the agent refused, a plain Error when
// the transport failed (no answer, deadline, broken connection). Timeouts per call are the
// k*Timeout constants in the .cc.
class AgentClient {
 public:
  explicit AgentClient(std::shared_ptr<grpc::Channel> channel);
  ~AgentClient();

  // Version handshake; throws if the agent speaks another protocol version. Without
  // `tpu_worker_number` the agent answers at once, its number only if it knows it already.
  AgentHello Hello(bool tpu_worker_number = true);
  // Creates the workdir and job directory (freeing the accelerators first if asked).
  AgentPrepareReply Prepare(const AgentPrepareRequest& request);
  // GO: releases the prepared process (its supervisor already holds it, waiting), at
  // `start_at_ns` of the agent's wall clock if that is ahead (the lockstep start), else at once.
  // `confirm_within` > 0: unless Confirm reaches the agent within that long of the release, the
  // job's supervisor stops it (the gang's start was left in part).
  AgentStartReply Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns = 0,
                        std::chrono::milliseconds confirm_within = std::chrono::milliseconds(0));
  // The gang's start is whole: the attempt started with a confirmation window runs on. Returns
  // true if it had already ended by itself. Throws AgentRefusal when it came too late (the job
  // was stopped for want of it) or the attempt never started there.
  bool Confirm(const std::string& job_id, uint32_t attempt);
  // The attempt's state; nullopt if the agent has never heard of it.
  std::optional<AgentJobStatus> Status(const std::string& job_id, uint32_t attempt);
  // SIGTERM to the job's process group, SIGKILL after grace; returns when none is left.
  AgentStopReply Stop(const std::string& job_id, uint32_t attempt, std::chrono::seconds grace);
  // The worker's health for `podrun doctor`; `fix`: free the accelerators first.
  AgentInspection Inspect(bool fix, bool all_users = false);
  // Mounts what is not mounted yet; one sentence per mount. Throws as Prepare does (a mount
  // that fails is AgentRefusal naming it and the failing command).
  std::vector<std::string> Mount(const AgentMountRequest& request);
  // `podrun top`: the attempt's state, usage and last output; nullopt if the agent has never
  // heard of the attempt.
  std::optional<AgentTopSample> Top(const std::string& job_id, uint32_t attempt);
  // `podrun why` on the worker: its job attempt's processes now (nullopt: the agent has no
  // record of the attempt). Its deadline covers the request's CPU window and stack timeout.
  std::optional<AgentWhyReport> Why(const std::string& job_id, uint32_t attempt,
                                    const AgentWhyRequest& request);
  // The attempt's steps as the worker's supervisor recorded them; nullopt when it has no record
  // (no progress pattern, nothing matched yet, or an agent without the Steps RPC).
  std::optional<AgentSteps> Steps(const std::string& job_id, uint32_t attempt);
  // Asks the agent to exit (force: even with running jobs, which are stopped first).
  void Shutdown(bool force);

  // Reading jobs' logs, and code sync, through this client's channel; they live as long as it.
  AgentLogReader& logs() { return logs_; }
  AgentSyncClient& sync() { return sync_; }

 private:
  struct Stub;  // the generated stub; kept out of this header
  std::unique_ptr<Stub> stub_;
  AgentLogReader logs_;
  AgentSyncClient sync_;
};

}  // namespace podrun
