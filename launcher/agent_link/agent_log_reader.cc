// The launcher's log streaming calls to an agent (StreamLogs, blocking or with gRPC's callback
// API): see agent_log_reader.h.
#include "launcher/agent_link/agent_log_reader.h"

#include <algorithm>
#include <atomic>

#include "launcher/agent_link/agent_rpc.h"
#include "launcher/base/error.h"

namespace podrun {

using agent_rpc::Check;
using agent_rpc::FromProto;
using agent_rpc::GapFromProto;

struct AgentLogReader::Stub {
  std::unique_ptr<v1::Agent::Stub> stub;
};

namespace {

std::vector<LogRecord> TakeRecords(v1::LogBatch& batch) {
  std::vector<LogRecord> records;
  records.reserve(static_cast<size_t>(batch.records_size()));
  for (v1::LogRecord& r : *batch.mutable_records()) {
    records.push_back(
        {r.seq(), r.time_ns(), static_cast<LogStream>(r.stream()), std::move(*r.mutable_data())});
  }
  return records;
}

// One StreamLogs call on gRPC's callback API. It owns itself from Begin until OnDone.
class LogStreamReactor final : public grpc::ClientReadReactor<v1::LogBatch>, public AgentLogStream {
 public:
  LogStreamReactor(uint64_t from_seq, AgentLogReader::OnBatch on_batch,
                   AgentLogReader::OnStreamDone on_done)
      : on_batch_(std::move(on_batch)), on_done_(std::move(on_done)) {
    result_.next_seq = std::max<uint64_t>(from_seq, 1);
  }

  void Begin(v1::Agent::Stub& stub, v1::LogsRequest request,
             std::shared_ptr<LogStreamReactor> self) {
    request_ = std::move(request);
    self_ = std::move(self);
    stub.async()->StreamLogs(&ctx_, &request_, this);
    StartRead(&batch_);
    StartCall();
  }

  void Cancel() override {
    cancelled_ = true;
    ctx_.TryCancel();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the stream has ended: OnDone follows
    if (batch_.has_end()) result_.end = FromProto(batch_.end());
    if (auto gap = GapFromProto(batch_.has_log_gap(), batch_.log_gap())) result_.gap = gap;
    if (batch_.records_size() > 0) {
      std::vector<LogRecord> records = TakeRecords(batch_);
      result_.next_seq = records.back().seq + 1;
      if (!on_batch_(std::move(records))) {
        Cancel();
        return;
      }
    }
    batch_.Clear();
    StartRead(&batch_);
  }

  void OnDone(const grpc::Status& status) override {
    std::exception_ptr error;
    if (cancelled_) {
      result_.cancelled = true;
      result_.end.reset();
    } else {
      try {
        Check(status, "StreamLogs");
      } catch (...) {
        error = std::current_exception();
      }
    }
    AgentLogReader::OnStreamDone on_done = std::move(on_done_);
    AgentLogStreamEnd result = result_;
    std::shared_ptr<LogStreamReactor> self = std::move(self_);  // may end this object's life
    on_done(result, error);
  }

 private:
  grpc::ClientContext ctx_;
  v1::LogsRequest request_;
  v1::LogBatch batch_;
  AgentLogReader::OnBatch on_batch_;
  AgentLogReader::OnStreamDone on_done_;
  AgentLogStreamEnd result_;
  std::atomic<bool> cancelled_{false};
  std::shared_ptr<LogStreamReactor> self_;
};

}  // namespace

std::optional<AgentLogStreamEnd> LogStreamEndFromBytes(std::string_view payload) {
  v1::LogBatch batch;
  if (!batch.ParseFromArray(payload.data(), static_cast<int>(payload.size())) || !batch.has_end()) {
    return std::nullopt;
  }
  AgentLogStreamEnd out;
  out.end = FromProto(batch.end());
  out.gap = GapFromProto(batch.has_log_gap(), batch.log_gap());
  return out;
}

AgentLogReader::AgentLogReader(std::shared_ptr<grpc::Channel> channel)
    : stub_(std::make_unique<Stub>(Stub{v1::Agent::NewStub(std::move(channel))})) {}

AgentLogReader::~AgentLogReader() = default;

AgentLogStreamEnd AgentLogReader::StreamLogs(const std::string& job_id, uint32_t attempt,
                                             uint64_t from_seq, bool follow,
                                             const OnBatch& on_batch, const std::stop_token& stop) {
  grpc::ClientContext ctx;
  std::stop_callback cancel_on_stop(stop, [&ctx] { ctx.TryCancel(); });
  v1::LogsRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_from_seq(from_seq);
  req.set_follow(follow);
  auto reader = stub_->stub->StreamLogs(&ctx, req);
  AgentLogStreamEnd result;
  result.next_seq = std::max<uint64_t>(from_seq, 1);
  v1::LogBatch batch;
  while (reader->Read(&batch)) {
    if (batch.has_end()) result.end = FromProto(batch.end());
    if (auto gap = GapFromProto(batch.has_log_gap(), batch.log_gap())) result.gap = gap;
    if (batch.records_size() == 0) continue;
    std::vector<LogRecord> records = TakeRecords(batch);
    result.next_seq = records.back().seq + 1;
    if (!on_batch(std::move(records))) {
      result.cancelled = true;
      ctx.TryCancel();
      break;
    }
  }
  grpc::Status status = reader->Finish();
  if (stop.stop_requested()) result.cancelled = true;
  if (result.cancelled) {
    result.end.reset();
    return result;
  }
  Check(status, "StreamLogs");
  return result;
}

std::shared_ptr<AgentLogStream> AgentLogReader::StartStreamLogs(const std::string& job_id,
                                                                uint32_t attempt, uint64_t from_seq,
                                                                bool follow, OnBatch on_batch,
                                                                OnStreamDone on_done) {
  v1::LogsRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_from_seq(from_seq);
  req.set_follow(follow);
  auto stream =
      std::make_shared<LogStreamReactor>(from_seq, std::move(on_batch), std::move(on_done));
  stream->Begin(*stub_->stub, std::move(req), stream);
  return stream;
}

}  // namespace podrun
