// See stream_log.h.
#include "worker/stream_log.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string_view>
#include <vector>

#include "proto/log_wire.h"
#include "proto/wire_compressor.h"
#include "proto/write_all.h"
#include "worker/job/job_log_stream.h"
#include "worker/rpc/agent_proto.h"

namespace podrun::agent {
namespace {

// Frames to stdout, one write per batch: a compressed batch when that pays (--compress), else a
// writev of the frames (the records' data is not copied).
class StdoutLogSink : public JobLogSink {
 public:
  explicit StdoutLogSink(bool compress) {
    if (compress) compressor_.emplace();
  }

  bool Records(std::vector<LogRecord>&& records) override {
    buffer_.clear();
    for (const LogRecord& r : records) AppendWireRecordHeader(r, &buffer_);
    pieces_.clear();
    for (size_t i = 0; i < records.size(); ++i) {
      pieces_.emplace_back(buffer_.data() + i * kWireHeaderBytes, kWireHeaderBytes);
      pieces_.emplace_back(records[i].data);
    }
    last_sent_ = std::chrono::steady_clock::now();
    if (compressor_) {
      if (std::optional<std::string_view> batch = compressor_->Compress(pieces_)) {
        return WriteAll(STDOUT_FILENO, *batch);
      }
    }
    return WriteAllOf(STDOUT_FILENO, pieces_);
  }
  bool End(const ProcessEnd& exit, const std::optional<LogGapInfo>& gap) override {
    buffer_.clear();
    AppendWireEnd(EndBatch(exit, gap).SerializeAsString(), &buffer_);
    return Send();
  }
  // A heartbeat if nothing was sent for kWireHeartbeatInterval; false if the reader is gone.
  bool KeepAlive() {
    if (std::chrono::steady_clock::now() - last_sent_ < kWireHeartbeatInterval) return true;
    buffer_.clear();
    AppendWireHeartbeat(&buffer_);
    return Send();
  }

 private:
  bool Send() {
    last_sent_ = std::chrono::steady_clock::now();
    return WriteAll(STDOUT_FILENO, buffer_);
  }

  std::optional<WireCompressor> compressor_;
  std::string buffer_;
  std::vector<std::string_view> pieces_;
  std::chrono::steady_clock::time_point last_sent_ = std::chrono::steady_clock::now();
};

// False once nobody reads stdout any more (the launcher closed the channel).
bool ReaderPresent() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return ::poll(&p, 1, 0) <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0;
}

}  // namespace

int StreamLog(const StreamLogArgs& args) {
  ::signal(SIGPIPE, SIG_IGN);  // a closed channel is a write error, not a kill
  try {
    const JobDir dir(args.home, args.job_id, args.attempt);
    if (!dir.Exists()) {
      std::fprintf(stderr, "no job %s/%u on this worker\n", args.job_id.c_str(), args.attempt);
      return kStreamLogRefused;
    }
    StdoutLogSink sink(args.compress);
    const JobLogStreamEnd end =
        StreamJobLog(args.home, dir, ReadJobSnapshot(dir, /*count_records=*/false), args.from_seq,
                     args.follow, sink, [&] { return ReaderPresent() && sink.KeepAlive(); });
    return end == JobLogStreamEnd::kEnded || end == JobLogStreamEnd::kCaughtUp ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stream-log: %s\n", e.what());
    return 1;
  }
}

}  // namespace podrun::agent
