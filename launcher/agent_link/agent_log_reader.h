// AgentLogReader: reading a job attempt's log from its agent (the StreamLogs RPC), blocking or
// on gRPC's callback API, from a sequence number on. AgentClient gives one (`logs()`); the
// launcher's other way to read a log, over an SSH channel of its own, is ssh_log_stream.h.
#pragma once

#include <grpcpp/channel.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/agent_link/agent_refusal.h"
#include "proto/log_record.h"
#include "proto/process_end.h"

namespace podrun {

// Output a worker could not write to its job's log (its disk was full), summed over the
// attempt; the log holds a marker where each gap is.
struct AgentLogGap {
  uint64_t from_seq = 0;  // the first gap's place in the log
  uint64_t bytes = 0;
  uint64_t chunks = 0;
  std::string cause;  // e.g. "No space left on device"
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

// A log stream started by AgentLogReader::StartStreamLogs.
class AgentLogStream {
 public:
  virtual ~AgentLogStream() = default;
  // Ends the stream early (from any thread); its on_done then reports it cancelled.
  virtual void Cancel() = 0;
};

// The logs of one agent behind one channel. Each method may be called from any thread,
// concurrently. Errors are AgentClient's: AgentRefusal when the agent refused (no such job), a
// plain Error(kUnreachable) when the transport failed. No deadline: a follow lasts as long as
// the job; the channel's keepalive detects a dead connection.
class AgentLogReader {
 public:
  explicit AgentLogReader(std::shared_ptr<grpc::Channel> channel);
  ~AgentLogReader();

  // Called with each batch of records, in sequence order; return false to stop the stream.
  using OnBatch = std::function<bool(std::vector<LogRecord>&& records)>;
  // Streams the log from `from_seq`, blocking. With `follow`, returns once the process has
  // ended and every record was delivered; without, at the log's current end. Records delivered
  // before a failure stay delivered: resume from the last seq + 1. `stop` cancels from another
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
