// End-to-end tests of the real podrun-agent binary over its unix socket: announcement,
// handshake, prepare/start, lossless log streaming with resume, status, stop, dial-stdio,
// idle exit, and the socket's confinement (0700 directory, no TCP listener).
#include <gtest/gtest.h>

#include "worker/agent_fixture.h"
#include "worker/rpc/job_why.h"

namespace podrun::agent {
namespace {

TEST_F(AgentTest, HelloAndConfinement) {
  v1::HelloRequest req;
  req.set_protocol_version(kProtocolVersion);
  req.set_launcher_version("test");
  v1::HelloReply reply;
  auto status = stub_->Hello(Context().get(), req, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.protocol_version(), kProtocolVersion);
  EXPECT_EQ(reply.agent_version(), PODRUN_VERSION);
  EXPECT_EQ(reply.pid(), agent_pid_);
  EXPECT_EQ(reply.home(), home_.string());
  EXPECT_FALSE(reply.hostname().empty());
  EXPECT_GT(reply.now_ns(), 0);

  struct stat st {};
  ASSERT_EQ(::stat((home_ / "run").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  // No TCP listener of the agent (ss names the process with -p).
  const std::string tcp = Shell("ss -ltnpH 2>&1");
  EXPECT_EQ(tcp.find("podrun-agent"), std::string::npos) << tcp;
  EXPECT_EQ(tcp.find("pid=" + std::to_string(agent_pid_) + ","), std::string::npos) << tcp;
  const std::string unix_sockets = Shell("ss -lxpH 2>&1");
  EXPECT_NE(unix_sockets.find(socket_), std::string::npos) << unix_sockets;
}

TEST_F(AgentTest, RefusesAnotherProtocolVersion) {
  v1::HelloRequest req;
  req.set_protocol_version(kProtocolVersion + 1);
  v1::HelloReply reply;
  auto status = stub_->Hello(Context().get(), req, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("launcher speaks protocol 2, agent speaks 1"),
            std::string::npos)
      << status.error_message();
}

TEST_F(AgentTest, StreamsEveryLineExactlyOnceAndResumes) {
  constexpr int kLines = 20000;
  // The supervisor first reads the output kOutputQuietAfterStart after the start: the lines come
  // after it, as they are printed (not all at once from the pipe, in one or two records).
  PrepareAndStart("lines", "sleep 0.3; for i in $(seq 1 " + std::to_string(kLines) +
                               "); do echo \"line $i\"; done; echo to-stderr >&2; exit 7");
  Stream all = ReadStream("lines", 1, /*follow=*/true);
  ASSERT_TRUE(all.status.ok()) << all.status.error_message();
  ASSERT_TRUE(all.end);
  EXPECT_EQ(all.end->exit_code(), 7);
  std::string out, err;
  for (size_t i = 0; i < all.records.size(); ++i) {
    ASSERT_EQ(all.records[i].seq(), i + 1);
    (all.records[i].stream() == v1::LogRecord::STDOUT ? out : err) += all.records[i].data();
  }
  std::string expected;
  for (int i = 1; i <= kLines; ++i) expected += "line " + std::to_string(i) + "\n";
  ExpectSameText(out, expected);
  EXPECT_EQ(err, "to-stderr\n");

  // Resume from the middle: exactly the rest, in order, ending with the same outcome.
  const uint64_t middle = all.records.size() / 2;
  Stream rest = ReadStream("lines", middle, /*follow=*/false);
  ASSERT_TRUE(rest.status.ok());
  ASSERT_EQ(rest.records.size(), all.records.size() - middle + 1);
  // Batched: the records of an ended job are all there at once (a followed job's arrive as fast
  // as it prints them, one a message when it prints slowly, as under a sanitizer).
  EXPECT_LT(rest.messages, static_cast<int>(rest.records.size()));
  EXPECT_EQ(rest.records.front().seq(), middle);
  EXPECT_EQ(rest.records.front().data(), all.records[middle - 1].data());
  ASSERT_TRUE(rest.end);
  EXPECT_EQ(rest.end->exit_code(), 7);

  v1::StatusRequest req;
  req.set_job_id("lines");
  req.set_attempt(1);
  v1::StatusReply status;
  ASSERT_TRUE(stub_->Status(Context().get(), req, &status).ok());
  EXPECT_EQ(status.state(), v1::StatusReply::EXITED);
  EXPECT_EQ(status.exit_code(), 7);
  EXPECT_EQ(status.last_seq(), all.records.size());
  EXPECT_EQ(status.worker_id(), 2u);
}

TEST_F(AgentTest, StopEndsTheJob) {
  PrepareAndStart("sleepy", "echo up; sleep 1000");
  v1::StatusRequest req;
  req.set_job_id("sleepy");
  req.set_attempt(1);
  v1::StatusReply reply;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {  // until "up" is in the log
    ASSERT_TRUE(stub_->Status(Context().get(), req, &reply).ok());
    EXPECT_EQ(reply.state(), v1::StatusReply::RUNNING);
  } while (reply.last_seq() == 0 && std::chrono::steady_clock::now() < deadline);

  v1::StopRequest stop;
  stop.set_job_id("sleepy");
  stop.set_attempt(1);
  stop.set_grace_seconds(5);
  v1::StopReply stopped;
  auto status = stub_->Stop(Context().get(), stop, &stopped);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(stopped.was_running());
  EXPECT_TRUE(stopped.end().stopped_by_request());
  EXPECT_EQ(stopped.end().signal(), SIGTERM);

  ASSERT_TRUE(stub_->Status(Context().get(), req, &reply).ok());
  EXPECT_EQ(reply.state(), v1::StatusReply::STOPPED);
  EXPECT_NE(::kill(-reply.pid(), 0), 0);
  Stream logs = ReadStream("sleepy", 1, /*follow=*/true);
  ASSERT_EQ(logs.records.size(), 1u);
  EXPECT_EQ(logs.records[0].data(), "up\n");
  ASSERT_TRUE(logs.end);
  EXPECT_TRUE(logs.end->stopped_by_request());

  req.set_job_id("missing");
  EXPECT_EQ(stub_->Status(Context().get(), req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(AgentTest, TopReportsUsageOutputAndTheLastLine) {
  PrepareAndStart("busy",
                  "echo first; echo 'the last line'; t=$((SECONDS+60)); "
                  "while [ $SECONDS -lt $t ]; do :; done");
  v1::TopRequest req;
  req.set_job_id("busy");
  req.set_attempt(1);
  v1::TopReply first;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {  // until both lines are in the log
    ASSERT_TRUE(stub_->Top(Context().get(), req, &first).ok());
  } while (first.output_bytes() < 20 && std::chrono::steady_clock::now() < deadline);
  std::this_thread::sleep_for(300ms);
  v1::TopReply second;
  ASSERT_TRUE(stub_->Top(Context().get(), req, &second).ok());
  EXPECT_EQ(second.state(), v1::StatusReply::RUNNING);
  EXPECT_GT(second.pid(), 0);
  EXPECT_GE(second.processes(), 1u);
  EXPECT_GT(second.rss_bytes(), 0u);
  EXPECT_GT(second.sample_monotonic_ns(), first.sample_monotonic_ns());
  EXPECT_GT(second.cpu_ns(), first.cpu_ns());  // the loop burns CPU
  EXPECT_EQ(second.output_bytes(), 20u);       // "first\n" and "the last line\n"
  EXPECT_GE(second.last_seq(), 1u);
  EXPECT_EQ(second.last_line(), "the last line");
  EXPECT_GT(second.last_output_ns(), 0);
  EXPECT_GE(second.now_ns(), second.last_output_ns());
  EXPECT_FALSE(second.has_end());

  v1::StopRequest stop;
  stop.set_job_id("busy");
  stop.set_attempt(1);
  v1::StopReply stopped;
  ASSERT_TRUE(stub_->Stop(Context().get(), stop, &stopped).ok());
  v1::TopReply ended;
  ASSERT_TRUE(stub_->Top(Context().get(), req, &ended).ok());
  EXPECT_EQ(ended.state(), v1::StatusReply::STOPPED);
  EXPECT_TRUE(ended.has_end());
  EXPECT_EQ(ended.processes(), 0u);
  EXPECT_EQ(ended.cpu_ns(), 0u);
  EXPECT_EQ(ended.last_line(), "the last line");

  req.set_job_id("missing");
  EXPECT_EQ(stub_->Top(Context().get(), req, &ended).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(AgentTest, WhyReportsAJobsProcessesAndRefusesBadRequests) {
  PrepareAndStart("napping", "echo up; sleep 60; echo never");
  v1::WhyRequest req;
  req.set_job_id("napping");
  req.set_attempt(1);
  req.set_cpu_window_ms(100);
  v1::WhyReply reply;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {  // until the shell has printed and started its sleep
    reply.Clear();
    ASSERT_TRUE(stub_->Why(Context().get(), req, &reply).ok());
  } while ((reply.last_line() != "up" || reply.processes_size() < 2) &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(reply.state(), v1::StatusReply::RUNNING);
  EXPECT_EQ(reply.last_line(), "up");
  ASSERT_EQ(reply.processes_size(), 2);
  const v1::ProcessReport& sleeper = reply.processes(1);
  EXPECT_EQ(sleeper.command(), "sleep");
  EXPECT_EQ(sleeper.cmdline(), "sleep 60");
  EXPECT_EQ(sleeper.ppid(), reply.processes(0).pid());
  EXPECT_EQ(sleeper.state(), v1::PROCESS_SLEEPING);
  EXPECT_FALSE(sleeper.signalled());
  EXPECT_EQ(sleeper.stack(), "");  // none asked
  EXPECT_EQ(reply.signal_note(), "");
  EXPECT_GE(reply.gather_ms(), 100u);
  EXPECT_GE(reply.now_ns(), reply.last_output_ns());

  v1::WhyRequest bad = req;
  bad.set_signal(999);
  EXPECT_EQ(stub_->Why(Context().get(), bad, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  bad = req;
  bad.set_cpu_window_ms(kMaxCpuWindowMs + 1);
  EXPECT_EQ(stub_->Why(Context().get(), bad, &reply).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  req.set_job_id("missing");
  EXPECT_EQ(stub_->Why(Context().get(), req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(AgentTest, SecondServeAnnouncesTheRunningAgent) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  pid_t pid = Spawn({PODRUN_AGENT_BINARY, "serve", "--home", home_.string()}, -1, write_end.get());
  write_end.reset();
  EXPECT_EQ(ReadLine(read_end.get(), 20s), announcement_);
  int status = WaitExit(pid, 20s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST_F(AgentTest, DialStdioCarriesGrpc) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd ours(pair[0]), theirs(pair[1]);
  pid_t pid = Spawn({PODRUN_AGENT_BINARY, "dial-stdio", "--home", home_.string()}, theirs.get(),
                    theirs.get());
  ASSERT_GT(pid, 0);
  theirs.reset();
  ::fcntl(ours.get(), F_SETFL, ::fcntl(ours.get(), F_GETFL) | O_NONBLOCK);
  auto channel = grpc::CreateCustomInsecureChannelFromFd("dial-stdio", ours.release(),
                                                         grpc::ChannelArguments());
  auto stub = v1::Agent::NewStub(channel);
  for (int i = 0; i < 3; ++i) {
    v1::HelloRequest req;
    req.set_protocol_version(kProtocolVersion);
    v1::HelloReply reply;
    auto status = stub->Hello(Context().get(), req, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(reply.pid(), agent_pid_);
  }
  stub.reset();
  channel.reset();  // closes our end: dial-stdio sees EOF and exits
  int status = WaitExit(pid, 20s);
  EXPECT_TRUE(WIFEXITED(status)) << status;
}

TEST_F(AgentTest, ShutdownRefusedWhileAJobRunsUnlessForced) {
  PrepareAndStart("busy", "sleep 1000");
  v1::ShutdownRequest req;
  v1::ShutdownReply reply;
  EXPECT_EQ(stub_->Shutdown(Context().get(), req, &reply).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  req.set_force(true);
  auto status = stub_->Shutdown(Context().get(), req, &reply);
  ASSERT_TRUE(status.ok()) << status.error_message();
  int exit_status = WaitExit(agent_pid_, 20s);
  EXPECT_TRUE(WIFEXITED(exit_status) && WEXITSTATUS(exit_status) == 0) << exit_status;
  agent_pid_ = -1;
  // The job was stopped, and its outcome is on disk.
  std::ifstream in(home_ / "jobs" / "busy" / "1" / "exit_status");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("stopped_by_request 1"), std::string::npos) << text;
}

TEST(AgentIdleTest, ExitsWhenIdle) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "agent-idle.XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  const auto started = std::chrono::steady_clock::now();
  pid_t pid = Spawn(
      {PODRUN_AGENT_BINARY, "serve", "--foreground", "--home", tmpl + "/h", "--idle-exit", "1"}, -1,
      write_end.get());
  write_end.reset();
  EXPECT_TRUE(ReadLine(read_end.get(), 20s).starts_with("PODRUN-AGENT READY 1 "));
  int status = WaitExit(pid, 20s);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  EXPECT_FALSE(std::filesystem::exists(tmpl + "/h/run/agent.sock"));
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace podrun::agent
