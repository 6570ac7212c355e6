// FollowLog: reads one worker's log of a job attempt from its agent, from a sequence number on,
// for `launch` and `logs` alike. A broken stream is resumed exactly (at the next sequence number)
// after reconnecting; a worker whose agent gives no progress for `lost_after` is given up, so a
// reconnect that succeeds but whose stream keeps ending at once can never loop without end, and
// an agent that refuses the stream (AgentRefusal) is given up at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"

namespace podrun {

struct LogFollowParams {
  std::string job_id;
  uint32_t attempt = 1;
  uint64_t from_seq = 1;
  bool follow = true;       // until the process has ended; else to the log's current end
  std::string description;  // "w3 (root@10.0.0.5:22)", for messages
  // How long the agent may give no progress (no record, no stream that stays up) before the
  // worker is given up.
  std::chrono::milliseconds lost_after = std::chrono::seconds(20);
  // Before each reconnection, but the first after a healthy stream broke (tried at once).
  std::chrono::milliseconds reconnect_pause = std::chrono::milliseconds(500);
  // A stream that stayed open this long was healthy: the give-up clock starts again after it.
  std::chrono::milliseconds healthy_stream = std::chrono::seconds(5);
};

struct LogFollowResult {
  std::optional<ProcessEnd> end;   // the process has ended and every record was delivered
  uint64_t next_seq = 1;           // the first record not delivered
  bool cancelled = false;          // on_batch asked to stop
  std::string lost;                // set when given up: why ("no answer from its agent ...")
  bool lost_by_hook = false;       // given up by the reconnect hook (GiveUpWorker): `lost` is its
                                   // reason as it gave it
  std::optional<AgentLogGap> gap;  // with `end`: output the worker could not keep on disk
};

// Thrown by a reconnect hook to give the worker up at once, without waiting for lost_after
// (e.g. its TPU node reads PREEMPTED): the message is why.
struct GiveUpWorker : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The seams FollowLog works through; each may be called only from the calling thread.
struct LogFollowHooks {
  std::function<std::shared_ptr<AgentClient>()> client;     // the current client (may be null)
  std::function<std::shared_ptr<AgentClient>()> reconnect;  // a new one, greeted; throws
  std::function<void(const std::string&)> say;              // a message for the user
  // Optional: opens the stream over a channel of its own (AgentLink::StartLogStream) instead
  // of the client's StreamLogs; returns null when there is none. Called on the calling thread
  // of FollowLogs with the next sequence number; not used by FollowLog.
  std::function<std::shared_ptr<AgentLogStream>(uint64_t from_seq, AgentLogReader::OnBatch,
                                                AgentLogReader::OnStreamDone)>
      open_stream;
};

// One log to follow among many.
struct LogFollowJob {
  LogFollowParams params;
  LogFollowHooks hooks;
  // Runs on one of gRPC's threads, one call at a time per log, different logs' calls
  // concurrently; return false to stop following that log. Must not throw.
  AgentLogReader::OnBatch on_batch;
};

// Follows every job's log at once, without a thread per log: the streams run on gRPC's
// callback threads, and a reconnect (blocking: SSH) gets a thread of its own only while it
// lasts. Blocks until every log is done (see LogFollowParams::follow: read, cancelled by its
// on_batch, or given up); calls on_finished(index into jobs, result) on the calling thread as
// each one is, and returns the results in the order of `jobs`. Hooks run on the calling
// thread (client, say) or on that log's reconnect thread (reconnect), never two at once for
// one log. If on_finished or a hook throws, FollowLogs cancels the open streams, stops the
// reconnects (between attempts), waits for both to end, then lets the exception through.
std::vector<LogFollowResult> FollowLogs(
    std::vector<LogFollowJob> jobs,
    const std::function<void(size_t, const LogFollowResult&)>& on_finished = {});

// One log, on the calling thread with a blocking stream: on_batch runs on the calling thread
// and may block (e.g. to bound what is queued), which FollowLogs' on_batch must not. The same
// rules as FollowLogs.
LogFollowResult FollowLog(const LogFollowParams& params, const LogFollowHooks& hooks,
                          const AgentLogReader::OnBatch& on_batch);

}  // namespace podrun
