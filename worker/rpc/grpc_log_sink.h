// GrpcLogSink: the StreamLogs RPC's JobLogSink (job/job_log_stream.h), records and the end as
// LogBatch messages on the RPC's stream.
#pragma once

#include <grpcpp/support/sync_stream.h>

#include <optional>
#include <utility>
#include <vector>

#include "proto/agent.pb.h"
#include "worker/job/job_log_stream.h"
#include "worker/rpc/agent_proto.h"

namespace podrun::agent {

// Each call returns false once a write fails (the reader went away, the call was cancelled).
class GrpcLogSink : public JobLogSink {
 public:
  explicit GrpcLogSink(grpc::ServerWriterInterface<v1::LogBatch>* writer) : writer_(writer) {}

  bool Records(std::vector<LogRecord>&& records) override {
    v1::LogBatch batch;
    for (LogRecord& r : records) AddRecord(r, &batch);
    return writer_->Write(batch);
  }
  bool End(const ProcessEnd& exit, const std::optional<LogGapInfo>& gap) override {
    return writer_->Write(EndBatch(exit, gap));
  }

 private:
  grpc::ServerWriterInterface<v1::LogBatch>* writer_;
};

}  // namespace podrun::agent
