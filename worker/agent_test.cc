// End-to-end tests of the real podrun-agent binary over its unix socket: announcement,
// handshake, prepare/start, lossless log streaming with resume, status, stop, dial-stdio,
// idle exit, and the socket's confinement (0700 directory, no TCP listener).
#include <fcntl.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/agent.grpc.pb.h"
#include "proto/protocol_version.h"
#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;
namespace v1 = podrun::agent::v1;

extern "C" char** environ;

// A child process with its stdin/stdout connected to the given fds (-1: inherit).
pid_t Spawn(const std::vector<std::string>& args, int stdin_fd, int stdout_fd) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdin_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stdin_fd, STDIN_FILENO);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stdout_fd, STDOUT_FILENO);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.reserve(copy.size() + 1);
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Reads the first line from fd within `timeout` (without the newline).
std::string ReadLine(int fd, std::chrono::milliseconds timeout) {
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char c;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    if (::read(fd, &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  return line;
}

// Output of a shell command.
std::string Shell(const std::string& command) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "agent.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    home_ = dir_ / "podrun";
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    UniqueFd read_end(fds[0]), write_end(fds[1]);
    agent_pid_ = Spawn({PODRUN_AGENT_BINARY, "serve", "--foreground", "--home", home_.string(),
                        "--idle-exit", "0"},
                       -1, write_end.get());
    ASSERT_GT(agent_pid_, 0);
    write_end.reset();
    announcement_ = ReadLine(read_end.get(), 20s);
    socket_ = (home_ / "run" / "agent.sock").string();
    ASSERT_EQ(announcement_, "PODRUN-AGENT READY 1 " PODRUN_VERSION " " + socket_);
    stub_ = v1::Agent::NewStub(
        grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    if (agent_pid_ > 0) {
      ::kill(agent_pid_, SIGKILL);
      ::waitpid(agent_pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<grpc::ClientContext> Context(std::chrono::seconds timeout = 30s) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() + timeout);
    return ctx;
  }

  void PrepareAndStart(const std::string& job_id, const std::string& run) {
    v1::PrepareRequest prepare;
    prepare.set_job_id(job_id);
    prepare.set_attempt(1);
    prepare.set_worker_id(2);
    prepare.set_workdir((dir_ / "work").string());
    (*prepare.mutable_env())["PODRUN_WORKER_ID"] = "2";
    prepare.set_run(run);
    v1::PrepareReply prepared;
    auto status = stub_->Prepare(Context().get(), prepare, &prepared);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(prepared.workdir(), std::filesystem::canonical(dir_ / "work").string());
    v1::StartRequest start;
    start.set_job_id(job_id);
    start.set_attempt(1);
    v1::StartReply started;
    status = stub_->Start(Context().get(), start, &started);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(started.pid(), 0);
  }

  // Reads a log stream to its end: records in arrival order, and the end if one came.
  struct Stream {
    std::vector<v1::LogRecord> records;
    std::optional<v1::ProcessEnd> end;
    int messages = 0;
    grpc::Status status;
  };
  Stream ReadStream(const std::string& job_id, uint64_t from_seq, bool follow) {
    v1::LogsRequest req;
    req.set_job_id(job_id);
    req.set_attempt(1);
    req.set_from_seq(from_seq);
    req.set_follow(follow);
    auto ctx = Context(60s);
    auto reader = stub_->StreamLogs(ctx.get(), req);
    Stream stream;
    v1::LogBatch batch;
    while (reader->Read(&batch)) {
      ++stream.messages;
      for (const auto& r : batch.records()) stream.records.push_back(r);
      if (batch.has_end()) stream.end = batch.end();
    }
    stream.status = reader->Finish();
    return stream;
  }

  std::filesystem::path dir_;
  std::filesystem::path home_;
  std::string socket_;
  std::string announcement_;
  pid_t agent_pid_ = -1;
  std::unique_ptr<v1::Agent::Stub> stub_;
};

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
  PrepareAndStart("lines", "for i in $(seq 1 " + std::to_string(kLines) +
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
  EXPECT_EQ(out, expected);
  EXPECT_EQ(err, "to-stderr\n");
  EXPECT_LT(all.messages, static_cast<int>(all.records.size()));  // batched

  // Resume from the middle: exactly the rest, in order, ending with the same outcome.
  const uint64_t middle = all.records.size() / 2;
  Stream rest = ReadStream("lines", middle, /*follow=*/false);
  ASSERT_TRUE(rest.status.ok());
  ASSERT_EQ(rest.records.size(), all.records.size() - middle + 1);
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
