// SshLogStream: a worker's job log over an SSH exec channel of its own (made here, or by the
// connection holder on its kept session), running
// `podrun-agent stream-log` (proto/log_wire.h), instead of the StreamLogs RPC through the agent
// tunnel: bulk output then skips gRPC's framing, the tunnel's socketpair and their wakeups
// (docs/decisions.md, "Bulk logs over a channel of their own"). The channel shares the
// session with the tunnel (SshSession::WakeOnIo).
//
// Records are handed to on_batch on one delivery thread shared by every stream of the process,
// so that merging and writing output (which may block on a slow terminal) never holds up the
// event loop; a stream that has more than kMaxUndeliveredBytes waiting, or all streams
// together kMaxUndeliveredTotal, stops reading its channel, and SSH's flow control then holds
// back the worker's side: what is buffered is bounded whatever the pod's size.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <filesystem>
#include <memory>
#include <string>

#include "launcher/agent_link/agent_log_reader.h"
#include "launcher/persist/holder_protocol.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

inline constexpr size_t kMaxUndeliveredBytes = size_t{8} << 20;
inline constexpr size_t kMaxUndeliveredTotal = size_t{64} << 20;

struct SshLogStreamRequest {
  std::string agent_path;  // the agent binary on the worker
  std::string job_id;
  uint32_t attempt = 1;
  uint64_t from_seq = 1;
  bool follow = true;
  std::string description;  // "w3 (root@10.0.0.5:22)", for errors
};

// The same contract as AgentLogReader::StartStreamLogs: on_batch runs for each batch in order,
// one call at a time; on_done runs once, last, with how the stream ended or the error
// (AgentRefusal when the agent refused: no such job; Error(kUnreachable) when the channel or
// connection failed). Call from any thread; `session()` is called on the loop (`executor`) and
// may return null (not connected: on_done gets the error). Cancel() ends it early.
std::shared_ptr<AgentLogStream> StartSshLogStream(
    asio::any_io_executor executor, std::function<std::shared_ptr<SshSession>()> session,
    SshLogStreamRequest request, AgentLogReader::OnBatch on_batch,
    AgentLogReader::OnStreamDone on_done);

// The same through the connection holder listening at `holder` (held_exec.h): stream-log runs on
// its kept session for `held_request`'s target and settings (its command is set here), and the
// output comes back as the holder's frames; a holder gone is an Error(kUnreachable) to on_done.
std::shared_ptr<AgentLogStream> StartHeldLogStream(asio::any_io_executor executor,
                                                   const std::filesystem::path& holder,
                                                   HolderRequest held_request,
                                                   SshLogStreamRequest request,
                                                   AgentLogReader::OnBatch on_batch,
                                                   AgentLogReader::OnStreamDone on_done);

// The command line that runs stream-log on the worker for `request`.
std::string StreamLogCommand(const SshLogStreamRequest& request);

}  // namespace podrun
