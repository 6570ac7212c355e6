// `podrun-agent stream-log`: a job attempt's log as framed records on stdout (proto/log_wire.h),
// for the launcher's bulk log channel: an SSH exec channel of its own, so that output does not
// pass through gRPC and the tunnel (docs/decisions.md, "Bulk logs over a channel of their own").
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace podrun::agent {

struct StreamLogArgs {
  std::filesystem::path home;  // the agent's directory
  std::string job_id;
  uint32_t attempt = 0;
  uint64_t from_seq = 1;
  bool follow = false;    // until the job has ended (then the end frame), else to the log's end
  bool compress = false;  // batches LZ4-compressed when that pays (proto/wire_compressor.h)
};

// Exit codes: 0 streamed to the end; 1 the reader went away or an I/O error (said on stderr);
// kStreamLogRefused (proto/log_wire.h): no such job on this worker (said on stderr).
int StreamLog(const StreamLogArgs& args);

}  // namespace podrun::agent
