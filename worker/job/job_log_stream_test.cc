// Tests of StreamJobLog against a real supervisor control socket (ControlServer on its
// LogWriter) and a real log file: a record the disk refused and a gap marker took the place of
// reaches a live reader from the supervisor's memory, in its place, and the marker does not.
#include "worker/job/job_log_stream.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "proto/process_identity.h"
#include "worker/supervisor/control_server.h"
#include "worker/supervisor/supervisor.h"

namespace podrun::agent {
namespace {

class CollectingSink : public JobLogSink {
 public:
  bool Records(std::vector<LogRecord>&& records) override {
    for (auto& r : records) records_.push_back(std::move(r));
    return true;
  }
  bool End(const ProcessEnd& exit, const std::optional<LogGapInfo>&) override {
    exit_code_ = exit.exit_code;
    return true;
  }
  std::vector<LogRecord> records_;
  std::optional<int> exit_code_;
};

class JobLogStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "logstream.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    home_ = tmpl;
    std::filesystem::create_directories(home_ / "run");
  }
  void TearDown() override { std::filesystem::remove_all(home_); }

  std::filesystem::path home_;
};

TEST_F(JobLogStreamTest, TheRecordAMarkerStandsForComesFromTheSupervisorsMemory) {
  const JobDir dir(home_, "held", 1);
  dir.Create();
  AppendOnlyLog log(dir.log_path());
  // The disk takes the first record and the marker, and refuses the job's last output: the
  // marker that takes its place on disk carries its seq.
  LogWriter writer(
      [&](const LogRecord& r) {
        if (r.seq > 1 && !IsGapMarker(r)) {
          throw std::system_error(ENOSPC, std::generic_category(), "append");
        }
        log.Append(r);
      },
      [] {});
  writer.Append(LogStream::kStdout, "first\n", 1);
  writer.Append(LogStream::kStdout, "last\n", 2);
  writer.Finish(3);
  ASSERT_TRUE(writer.gap());
  ProcessEnd end;
  end.exit_code = 4;
  end.end_time_ns = 3;
  dir.WriteProcessEnd(end);
  auto self = ProcessIdentity::Of(::getpid());
  ASSERT_TRUE(self);
  dir.WriteSupervisor(*self);
  ControlServer server(SupervisorSocketPath(home_, ::getpid()), writer);
  std::thread supervisor([&] { server.Linger(); });

  CollectingSink sink;
  const JobLogStreamEnd how = StreamJobLog(home_, dir, ReadJobSnapshot(dir, false), 1,
                                           /*follow=*/true, sink, [] { return true; });
  supervisor.join();
  EXPECT_EQ(how, JobLogStreamEnd::kEnded);
  EXPECT_EQ(sink.exit_code_, 4);
  ASSERT_EQ(sink.records_.size(), 2u);
  EXPECT_EQ(sink.records_[0].data, "first\n");
  EXPECT_EQ(sink.records_[1].seq, 2u);
  EXPECT_EQ(sink.records_[1].data, "last\n");
}

}  // namespace
}  // namespace podrun::agent
