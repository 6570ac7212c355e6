// See agent_proto.h.
#include "worker/rpc/agent_proto.h"

namespace podrun::agent {

v1::StatusReply::State ToProtoState(JobState state) {
  switch (state) {
    case JobState::kUnknown:
      return v1::StatusReply::UNKNOWN;
    case JobState::kPrepared:
      return v1::StatusReply::PREPARED;
    case JobState::kRunning:
      return v1::StatusReply::RUNNING;
    case JobState::kExited:
      return v1::StatusReply::EXITED;
    case JobState::kStopped:
      return v1::StatusReply::STOPPED;
    case JobState::kLost:
      return v1::StatusReply::LOST;
  }
  return v1::StatusReply::UNKNOWN;
}

void FillEnd(const ProcessEnd& exit, v1::ProcessEnd* end) {
  if (exit.exit_code) end->set_exit_code(*exit.exit_code);
  if (exit.signal) end->set_signal(*exit.signal);
  end->set_end_time_ns(exit.end_time_ns);
  end->set_stopped_by_request(exit.stopped_by_request);
  end->set_never_started(exit.never_started);
  end->set_lost(exit.lost);
  end->set_start_unconfirmed(exit.start_unconfirmed);
}

void FillGap(const LogGapInfo& gap, v1::LogGap* out) {
  out->set_from_seq(gap.from_seq);
  out->set_bytes(gap.bytes);
  out->set_chunks(gap.chunks);
  out->set_cause(gap.cause);
}

void AddRecord(LogRecord& r, v1::LogBatch* batch) {
  v1::LogRecord* out = batch->add_records();
  out->set_seq(r.seq);
  out->set_time_ns(r.time_ns);
  out->set_stream(static_cast<v1::LogRecord::Stream>(r.stream));
  out->set_data(std::move(r.data));
}

v1::LogBatch EndBatch(const ProcessEnd& exit, const std::optional<LogGapInfo>& gap) {
  v1::LogBatch last;
  FillEnd(exit, last.mutable_end());
  if (gap) FillGap(*gap, last.mutable_log_gap());
  return last;
}

}  // namespace podrun::agent
