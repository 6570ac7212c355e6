// End-to-end tests of the per-job supervisor with real podrun-agent processes: the job outlives
// a SIGKILLed agent and a new agent streams the rest of its log exactly once; a job whose
// supervisor is SIGKILLed too is lost and nothing of it remains; a stale record whose pid now
// names an unrelated process never gets that process signalled; an agent of another build hands
// over and its jobs are adopted; a full disk loses no line for a live reader and is reported; a
// control client that stalls holds up neither the job's output nor other clients.
#include "worker/supervisor/supervisor.h"

#include <sys/mount.h>

#include <algorithm>

#include "worker/agent_fixture.h"
#include "worker/base/unix_socket.h"

namespace podrun::agent {
namespace {

class SupervisorTest : public AgentTest {
 protected:
  // Starts another `serve --foreground` of `binary` on the same home; returns its pid.
  pid_t StartAgent(const std::string& binary = PODRUN_AGENT_BINARY) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    UniqueFd read_end(fds[0]), write_end(fds[1]);
    const pid_t pid =
        Spawn({binary, "serve", "--foreground", "--home", home_.string(), "--idle-exit", "0"}, -1,
              write_end.get());
    write_end.reset();
    EXPECT_EQ(ReadLine(read_end.get(), 30s), "PODRUN-AGENT READY 1 " PODRUN_VERSION " " + socket_);
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
    return pid;
  }

  void KillAgent() {
    ::kill(agent_pid_, SIGKILL);
    ::waitpid(agent_pid_, nullptr, 0);
    agent_pid_ = -1;
  }

  v1::StatusReply JobStatus(const std::string& job_id) {
    v1::StatusRequest req;
    req.set_job_id(job_id);
    req.set_attempt(1);
    v1::StatusReply reply;
    auto status = stub_->Status(Context().get(), req, &reply);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return reply;
  }

  JobDir Dir(const std::string& job_id) { return JobDir(home_, job_id, 1); }

  // Concatenated stdout of records, checked to be numbered without gaps from `first`.
  static std::string Text(const std::vector<v1::LogRecord>& records, uint64_t first = 1) {
    std::string out;
    for (size_t i = 0; i < records.size(); ++i) {
      EXPECT_EQ(records[i].seq(), first + i);
      if (records[i].stream() == v1::LogRecord::STDOUT) out += records[i].data();
    }
    return out;
  }

  static std::string Lines(int n) {
    std::string text;
    for (int i = 1; i <= n; ++i) text += "line " + std::to_string(i) + "\n";
    return text;
  }
};

TEST_F(SupervisorTest, TheJobOutlivesItsAgentAndANewAgentAdoptsIt) {
  constexpr int kLines = 3000;
  // Slow enough to be killed mid-run: about 1.5 s of output.
  PrepareAndStart("outlive", "for i in $(seq 1 " + std::to_string(kLines) +
                                 "); do echo \"line $i\"; [ $((i % 100)) = 0 ] && sleep 0.05; "
                                 "done; exit 5");
  // Read the first part through the first agent, then SIGKILL it.
  v1::LogsRequest req;
  req.set_job_id("outlive");
  req.set_attempt(1);
  req.set_from_seq(1);
  req.set_follow(true);
  std::vector<v1::LogRecord> got;
  {
    auto ctx = Context();
    auto reader = stub_->StreamLogs(ctx.get(), req);
    v1::LogBatch batch;
    while (got.size() < 20 && reader->Read(&batch)) {
      for (const auto& r : batch.records()) got.push_back(r);
    }
    ctx->TryCancel();
  }
  ASSERT_GE(got.size(), 20u);
  const pid_t supervisor = Dir("outlive").ReadSupervisor()->pid;
  KillAgent();
  EXPECT_EQ(::kill(supervisor, 0), 0);  // the supervisor, and so the job, goes on

  agent_pid_ = StartAgent();
  EXPECT_EQ(JobStatus("outlive").state(), v1::StatusReply::RUNNING);
  Stream rest = ReadStream("outlive", got.size() + 1, /*follow=*/true);
  ASSERT_TRUE(rest.status.ok()) << rest.status.error_message();
  ASSERT_TRUE(rest.end);
  EXPECT_EQ(rest.end->exit_code(), 5);
  EXPECT_FALSE(rest.end->lost());
  ExpectSameText(Text(got) + Text(rest.records, got.size() + 1), Lines(kLines));
  EXPECT_EQ(JobStatus("outlive").state(), v1::StatusReply::EXITED);
}

TEST_F(SupervisorTest, AJobWhoseSupervisorIsKilledIsLostAndEnded) {
  PrepareAndStart("doomed", "echo up; sleep 1000");
  const JobDir dir = Dir("doomed");
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (JobStatus("doomed").last_seq() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  const auto leader = dir.ReadJobProcess();
  ASSERT_TRUE(leader);
  ASSERT_FALSE(GroupMembersSince(*leader).empty());
  KillAgent();
  ::kill(dir.ReadSupervisor()->pid, SIGKILL);
  agent_pid_ = StartAgent();
  // A follower sees the end (lost) instead of waiting forever, and the job's group is gone.
  Stream logs = ReadStream("doomed", 1, /*follow=*/true);
  ASSERT_TRUE(logs.status.ok()) << logs.status.error_message();
  EXPECT_EQ(Text(logs.records), "up\n");
  ASSERT_TRUE(logs.end);
  EXPECT_TRUE(logs.end->lost());
  EXPECT_FALSE(logs.end->has_exit_code() || logs.end->has_signal());
  v1::StatusReply status = JobStatus("doomed");
  EXPECT_EQ(status.state(), v1::StatusReply::LOST);
  for (int i = 0; i < 250 && !GroupMembersSince(*leader).empty(); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(GroupMembersSince(*leader).empty());
  ASSERT_TRUE(dir.ReadProcessEnd());
  EXPECT_TRUE(dir.ReadProcessEnd()->lost);
}

TEST_F(SupervisorTest, AStaleRecordNeverSignalsAnUnrelatedProcess) {
  // An attempt recorded by an earlier boot's or an earlier life's processes; the pid it names
  // now belongs to an unrelated process (leading its own group, as a job's leader would).
  const pid_t unrelated = Spawn({"/usr/bin/setsid", "/bin/sleep", "1000"}, -1, -1);
  ASSERT_GT(unrelated, 0);
  std::optional<ProcessIdentity> now;
  for (int i = 0; i < 250 && !(now = ProcessIdentity::Of(unrelated)); ++i) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(now);
  for (int i = 0; i < 250 && ::getpgid(unrelated) != unrelated; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  const JobDir dir = Dir("stale");
  dir.Create();
  dir.WriteWorkerId(0);
  ProcessIdentity old_job = *now;
  old_job.start_ticks = now->start_ticks > 10 ? now->start_ticks - 10 : 0;  // another process
  dir.WriteJobProcess(old_job);
  dir.WriteStarted(unrelated, 1);
  ProcessIdentity old_supervisor = old_job;
  old_supervisor.pid = ::getpid();  // alive, but not the supervisor: another start time
  dir.WriteSupervisor(old_supervisor);

  v1::StopRequest stop;
  stop.set_job_id("stale");
  stop.set_attempt(1);
  stop.set_grace_seconds(1);
  v1::StopReply stopped;
  auto status = stub_->Stop(Context().get(), stop, &stopped);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(stopped.end().lost());
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(now->Alive()) << "the unrelated process was signalled";
  ::kill(unrelated, SIGKILL);
  ::waitpid(unrelated, nullptr, 0);
}

TEST_F(SupervisorTest, AnAgentOfAnotherBuildHandsOverAndItsJobsAreAdopted) {
  PrepareAndStart("handed", "echo before; sleep 1000");
  // Another build: the same binary with bytes appended (another content, the same code).
  const std::filesystem::path other = dir_ / "podrun-agent-next";
  std::filesystem::copy_file(PODRUN_AGENT_BINARY, other);
  {
    std::ofstream out(other, std::ios::app | std::ios::binary);
    out << "another build";
  }
  std::filesystem::permissions(other, std::filesystem::perms::owner_all);
  v1::HelloRequest hello;
  v1::HelloReply before, after;
  ASSERT_TRUE(stub_->Hello(Context().get(), hello, &before).ok());

  // `serve` of the other build, as the launcher runs it: it takes over from the running agent.
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  const pid_t serve =
      Spawn({other.string(), "serve", "--home", home_.string()}, -1, write_end.get());
  write_end.reset();
  EXPECT_EQ(ReadLine(read_end.get(), 30s), "PODRUN-AGENT READY 1 " PODRUN_VERSION " " + socket_);
  EXPECT_TRUE(WIFEXITED(WaitExit(serve, 20s)));
  // The old agent exited by itself.
  const int old_exit = WaitExit(agent_pid_, 20s);
  EXPECT_TRUE(WIFEXITED(old_exit) && WEXITSTATUS(old_exit) == 0) << old_exit;
  agent_pid_ = -1;
  stub_ = v1::Agent::NewStub(
      grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(stub_->Hello(Context().get(), hello, &after).ok());
  EXPECT_NE(after.pid(), before.pid());
  EXPECT_NE(after.build_id(), before.build_id());
  // The job, started under the old agent, runs on and is the new agent's to stop.
  EXPECT_EQ(JobStatus("handed").state(), v1::StatusReply::RUNNING);
  v1::StopRequest stop;
  stop.set_job_id("handed");
  stop.set_attempt(1);
  stop.set_grace_seconds(5);
  v1::StopReply stopped;
  ASSERT_TRUE(stub_->Stop(Context().get(), stop, &stopped).ok());
  EXPECT_TRUE(stopped.was_running());
  EXPECT_TRUE(stopped.end().stopped_by_request());
  v1::ShutdownRequest shutdown;
  shutdown.set_force(true);
  v1::ShutdownReply done;
  stub_->Shutdown(Context().get(), shutdown, &done);
}

TEST_F(SupervisorTest, AStalledControlClientHoldsUpNeitherTheJobNorOtherClients) {
  // The job prints more than its pipes hold: it ends only if the supervisor drains them.
  v1::PrepareRequest prepare;
  prepare.set_job_id("stall");
  prepare.set_attempt(1);
  prepare.set_workdir((dir_ / "work").string());
  prepare.set_run("head -c 4194304 /dev/zero; exit 7");
  v1::PrepareReply prepared;
  ASSERT_TRUE(stub_->Prepare(Context().get(), prepare, &prepared).ok());
  const auto socket = SupervisorSocketPath(home_, Dir("stall").ReadSupervisor()->pid);
  // A client that sends its request line a byte at a time, never finishing it.
  UniqueFd stalled = ConnectUnix(socket);
  ASSERT_TRUE(stalled);
  ASSERT_EQ(::send(stalled.get(), "L", 1, MSG_NOSIGNAL), 1);
  UniqueFd other = ConnectUnix(socket);
  ASSERT_TRUE(other);
  const std::string ping = "PING\n";
  ASSERT_EQ(::send(other.get(), ping.data(), ping.size(), MSG_NOSIGNAL), 5);
  v1::StartRequest start;
  start.set_job_id("stall");
  start.set_attempt(1);
  v1::StartReply started;
  ASSERT_TRUE(stub_->Start(Context().get(), start, &started).ok());
  // Well within kMaxRequestBytes, each byte well within kRequestTimeout of the last.
  bool answered = false, ended = false;
  for (int i = 0; i < 250 && !(answered && ended); ++i) {
    (void)::send(stalled.get(), "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    pollfd p{other.get(), POLLIN, 0};
    answered = answered || ::poll(&p, 1, 100) == 1;
    if (answered) ::poll(nullptr, 0, 100);  // the pace of the stalled client's bytes
    ended = ended || Dir("stall").ReadProcessEnd().has_value();
  }
  EXPECT_TRUE(answered) << "another client waited for the stalled one";
  EXPECT_TRUE(ended) << "the job's pipes waited for the stalled client";
  EXPECT_EQ(ReadLine(other.get(), 10s), "ERROR unknown request");
  const auto end = Dir("stall").ReadProcessEnd();
  ASSERT_TRUE(end);
  EXPECT_EQ(end->exit_code, 7);
}

TEST_F(SupervisorTest, AFullDiskLosesNoLineForALiveReaderAndIsReported) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  // The job's directory on a 1 MiB tmpfs; the job prints about 6 MB.
  KillAgent();
  const std::filesystem::path jobs = home_ / "jobs";
  std::filesystem::create_directories(jobs);
  ASSERT_EQ(::mount("tmpfs", jobs.c_str(), "tmpfs", 0, "size=1m,mode=0700"), 0)
      << std::strerror(errno);
  struct Unmount {
    std::filesystem::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{jobs};
  agent_pid_ = StartAgent();
  constexpr int kLines = 200000;
  PrepareAndStart("full", "seq 1 " + std::to_string(kLines) + " | sed 's/^/line /'; exit 4");
  Stream logs = ReadStream("full", 1, /*follow=*/true);
  ASSERT_TRUE(logs.status.ok()) << logs.status.error_message();
  ASSERT_TRUE(logs.end);
  EXPECT_EQ(logs.end->exit_code(), 4);
  // Every line, exactly once, in order (records numbered without a gap).
  ExpectSameText(Text(logs.records), Lines(kLines));
  // The gap is reported, with its cause; the log on disk says where it is.
  v1::StatusReply status = JobStatus("full");
  EXPECT_EQ(status.state(), v1::StatusReply::EXITED);
  EXPECT_EQ(status.exit_code(), 4);
  ASSERT_TRUE(status.has_log_gap());
  EXPECT_GT(status.log_gap().bytes(), 0u);
  EXPECT_EQ(status.log_gap().cause(), std::strerror(ENOSPC));
  Stream from_disk = ReadStream("full", 1, /*follow=*/false);
  bool marker = false;
  for (const auto& r : from_disk.records)
    marker = marker || r.data().find("log gap") != std::string::npos;
  EXPECT_TRUE(marker || from_disk.records.size() == logs.records.size());
}

TEST_F(SupervisorTest, AFullDiskLosesNoLineForALiveReaderPastTheMemoryBound) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  // The job's directory on a 1 MiB tmpfs; the job prints 20 MB in lines of 100 bytes, more than
  // the supervisor may hold in memory (LogWriter::kMaxHeldBytes): what the reader has had must
  // make room, and the job wait for the reader, rather than drop a line it has not had.
  KillAgent();
  const std::filesystem::path jobs = home_ / "jobs";
  std::filesystem::create_directories(jobs);
  ASSERT_EQ(::mount("tmpfs", jobs.c_str(), "tmpfs", 0, "size=1m,mode=0700"), 0)
      << std::strerror(errno);
  struct Unmount {
    std::filesystem::path path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{jobs};
  agent_pid_ = StartAgent();
  constexpr int kLines = 202000;
  const std::string pad(88, 'x');
  PrepareAndStart("past-bound", "awk 'BEGIN { for (i = 1; i <= " + std::to_string(kLines) +
                                    "; i++) printf \"line %d " + pad + "\\n\", i }'; exit 3");
  Stream logs = ReadStream("past-bound", 1, /*follow=*/true);
  ASSERT_TRUE(logs.status.ok()) << logs.status.error_message();
  ASSERT_TRUE(logs.end);
  EXPECT_EQ(logs.end->exit_code(), 3);
  std::string expected;
  for (int i = 1; i <= kLines; ++i) expected += "line " + std::to_string(i) + " " + pad + "\n";
  std::string got;
  uint64_t seq = 0;
  bool numbered_without_gaps = true;
  for (const v1::LogRecord& r : logs.records) {
    numbered_without_gaps = numbered_without_gaps && r.seq() == ++seq;
    if (r.stream() == v1::LogRecord::STDOUT) got += r.data();
  }
  EXPECT_TRUE(numbered_without_gaps);
  ExpectSameText(got, expected);
  v1::StatusReply status = JobStatus("past-bound");
  ASSERT_TRUE(status.has_log_gap());
  EXPECT_GT(status.log_gap().bytes(), 18u << 20);  // 20 MB, of which 1 MiB fit
  EXPECT_EQ(status.log_gap().cause(), std::strerror(ENOSPC));
}

}  // namespace
}  // namespace podrun::agent
