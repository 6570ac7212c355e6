// Tests of the StreamLogs RPC's sink: a stream whose end cannot be delivered ends as the
// reader's going away, not as a delivered end.
#include "worker/rpc/grpc_log_sink.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"

namespace podrun::agent {
namespace {

// A stream whose writes fail from the `fail_from`th on (0: every write).
class FailingWriter : public grpc::ServerWriterInterface<v1::LogBatch> {
 public:
  explicit FailingWriter(int fail_from) : fail_from_(fail_from) {}
  void SendInitialMetadata() override {}
  bool Write(const v1::LogBatch& batch, grpc::WriteOptions) override {
    if (writes_++ >= fail_from_) return false;
    ended_ = ended_ || batch.has_end();
    return true;
  }
  int writes() const { return writes_; }
  bool ended() const { return ended_; }

 private:
  const int fail_from_;
  int writes_ = 0;
  bool ended_ = false;
};

class GrpcLogSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "logsink.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    home_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(home_); }

  // Streams an ended job without output to `writer`.
  JobLogStreamEnd StreamEndedJob(FailingWriter& writer) {
    const JobDir dir(home_, "ended", 1);
    dir.Create();
    ProcessEnd end;
    end.exit_code = 0;
    end.end_time_ns = 1;
    dir.WriteProcessEnd(end);
    GrpcLogSink sink(&writer);
    return StreamJobLog(home_, dir, ReadJobSnapshot(dir, false), 1, /*follow=*/true, sink,
                        [] { return true; });
  }

  std::filesystem::path home_;
};

TEST_F(GrpcLogSinkTest, AnEndThatCannotBeWrittenIsTheReaderGoing) {
  FailingWriter failing(0);
  EXPECT_EQ(StreamEndedJob(failing), JobLogStreamEnd::kReaderGone);
  EXPECT_EQ(failing.writes(), 1);
  EXPECT_FALSE(failing.ended());
}

TEST_F(GrpcLogSinkTest, AWrittenEndEndsTheStream) {
  FailingWriter working(1000);
  EXPECT_EQ(StreamEndedJob(working), JobLogStreamEnd::kEnded);
  EXPECT_TRUE(working.ended());
}

}  // namespace
}  // namespace podrun::agent
