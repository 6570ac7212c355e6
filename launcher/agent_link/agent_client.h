// AgentClient: the launcher's typed, blocking view of one podrun-agent (proto/agent.proto).
// It knows nothing of SSH: the caller makes the gRPC channel (a unix socket for --local, an
// fd bridged through SSH otherwise) and hands it over.
#pragma once

#include <grpcpp/channel.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/error.h"
#include "proto/log_record.h"
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

// A blob to send with PutBlobs: a local file's content, or bytes in memory (a manifest).
struct AgentBlob {
  std::string sha256;
  std::string file;  // read from here when set, in chunks
  std::string data;  // else these bytes
};

// What ApplySync did to a workdir.
struct AgentSyncApplied {
  uint64_t written = 0;
  uint64_t deleted = 0;
  uint64_t unchanged = 0;
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
};

// Output a worker could not write to its job's log (its disk was full), summed over the
// attempt; the log holds a marker where each gap is.
struct AgentLogGap {
  uint64_t from_seq = 0;  // the first gap's place in the log
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  std::string cause;  // e.g. "No space left on device"
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
  int64_t last_output_ns = 0;  // worker wall clock of the last output (0: none)
  std::string last_line;       // as printed: not necessarily UTF-8
};

struct AgentStopReply {
  bool was_running = false;
  bool killed = false;  // SIGKILL was needed after the grace period
  ProcessEnd end;
};

// How a StreamLogs call ended (when it did not throw).
struct AgentLogStreamEnd {
  std::optional<ProcessEnd> end;   // the process has ended and every record was delivered
  uint64_t next_seq = 0;           // resume from here (last delivered seq + 1, or from_seq)
  bool cancelled = false;          // stopped by the caller (on_batch or the stop token)
  std::optional<AgentLogGap> gap;  // with `end`: output the worker could not keep on disk
};

// How a log stream ended, from its last message (a serialized LogBatch with `end`, as the end
// frame of `podrun-agent stream-log` carries it); nullopt if it is not one. next_seq unset.
std::optional<AgentLogStreamEnd> LogStreamEndFromBytes(std::string_view payload);

// An agent that answered and refused the request (a bad argument, an unknown job, a workdir it
// cannot use): trying again through a new connection cannot help. Still exit code 3 (the worker
// could not be set up), but never taken for a lost connection.
class AgentRefusal : public Error {
 public:
  explicit AgentRefusal(const std::string& message) : Error(ExitCode::kUnreachable, message) {}
};

// A log stream started by AgentClient::StartStreamLogs.
class AgentLogStream {
 public:
  virtual ~AgentLogStream() = default;
  // Ends the stream early (from any thread); its on_done then reports it cancelled.
  virtual void Cancel() = 0;
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

  // Version handshake; throws if the agent speaks another protocol version.
  AgentHello Hello();
  // Creates the workdir and job directory (freeing the accelerators first if asked).
  AgentPrepareReply Prepare(const AgentPrepareRequest& request);
  // GO: releases the prepared process (its supervisor already holds it, waiting), at
  // `start_at_ns` of the agent's wall clock if that is ahead (the lockstep start), else at once.
  AgentStartReply Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns = 0);
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
  // Asks the agent to exit (force: even with running jobs, which are stopped first).
  void Shutdown(bool force);

  // Code sync (agent_client_sync.cc; proto/agent.proto, "Code sync").
  // The blobs of `sha256s` the worker's cache lacks, in the given order.
  std::vector<std::string> BlobsMissing(const std::vector<std::string>& sha256s);
  // Sends blobs through this connection; returns the bytes sent. Throws Error naming a local
  // file that cannot be read, or the agent's refusal (a hash that does not match).
  uint64_t PutBlobs(const std::vector<AgentBlob>& blobs);
  // Opens a peer listener on `address` serving the manifest's blobs to holders of `key`;
  // returns its port.
  uint16_t ServeBlobs(const std::string& address, const std::string& key,
                      const std::string& manifest_sha256, std::chrono::seconds lifetime);
  // Has the worker fetch the manifest's blobs it lacks from a peer's listener; returns the
  // bytes fetched.
  uint64_t FetchBlobs(const std::string& host, uint16_t port, const std::string& key,
                      const std::string& manifest_sha256);
  // Closes a listener; returns the bytes it served.
  uint64_t EndServe(uint16_t port);
  // Brings `workdir` to the manifest (blobs must be in the worker's cache).
  AgentSyncApplied ApplySync(const std::string& workdir, const std::string& manifest_sha256);

  // Called with each batch of records, in sequence order; return false to stop the stream.
  using OnBatch = std::function<bool(std::vector<LogRecord>&& records)>;
  // Streams the log from `from_seq`. With `follow`, returns once the process has ended and
  // every record was delivered; without, at the log's current end. Records delivered before
  // a failure stay delivered: resume from the last seq + 1. `stop` cancels from another
  // thread (then cancelled is set and nothing is thrown).
  AgentLogStreamEnd StreamLogs(const std::string& job_id, uint32_t attempt, uint64_t from_seq,
                               bool follow, const OnBatch& on_batch,
                               const std::stop_token& stop = {});

  // Called once, last, when a stream started by StartStreamLogs ends: how it ended (as
  // StreamLogs returns it), or the error StreamLogs would have thrown (then `end` holds the
  // next_seq to resume from).
  using OnStreamDone = std::function<void(AgentLogStreamEnd end, std::exception_ptr error)>;
  // StreamLogs without a thread: returns at once. on_batch runs on one of gRPC's threads, one
  // call at a time for this stream (keep it short: it holds that thread); on_done runs last.
  // The stream keeps what it needs alive by itself; dropping the returned handle does not end
  // it (Cancel does).
  std::shared_ptr<AgentLogStream> StartStreamLogs(const std::string& job_id, uint32_t attempt,
                                                  uint64_t from_seq, bool follow, OnBatch on_batch,
                                                  OnStreamDone on_done);

 private:
  struct Stub;  // the generated stub; kept out of this header
  std::unique_ptr<Stub> stub_;
};

}  // namespace podrun
