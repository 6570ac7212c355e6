// The agent's own types as protocol messages (proto/agent.proto), for the RPCs and for
// `stream-log`'s end frame.
#pragma once

#include <optional>

#include "proto/agent.pb.h"
#include "proto/log_record.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"
#include "worker/supervisor/log_writer.h"

namespace podrun::agent {

v1::StatusReply::State ToProtoState(JobState state);
void FillEnd(const ProcessEnd& exit, v1::ProcessEnd* end);
void FillGap(const LogGapInfo& gap, v1::LogGap* out);
// Appends `r` to `batch`, moving its data.
void AddRecord(LogRecord& r, v1::LogBatch* batch);
// The last message of a log stream: how the job ended and what it could not keep on disk.
v1::LogBatch EndBatch(const ProcessEnd& exit, const std::optional<LogGapInfo>& gap);

}  // namespace podrun::agent
