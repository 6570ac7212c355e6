// The test fixture of the agent's end-to-end tests (agent_test.cc, supervisor_test.cc): a real
// podrun-agent binary serving a temporary home, a gRPC stub on its socket, and helpers.
#pragma once

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

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "proto/agent.grpc.pb.h"
#include "proto/process_identity.h"
#include "proto/protocol_version.h"
#include "proto/unique_fd.h"
#include "worker/jobdir/job_dir.h"

extern "C" char** environ;

namespace podrun::agent {

using namespace std::chrono_literals;
namespace v1 = podrun::agent::v1;

// SIGKILLs every job's process group and supervisor under `home` (identity-checked).
inline void KillJobsUnder(const std::filesystem::path& home) {
  std::error_code ec;
  for (auto& job : std::filesystem::directory_iterator(home / "jobs", ec)) {
    for (auto& attempt : std::filesystem::directory_iterator(job.path(), ec)) {
      const JobDir dir(home, job.path().filename().string(),
                       static_cast<uint32_t>(std::stoul(attempt.path().filename().string())));
      if (auto leader = dir.ReadJobProcess()) SignalGroup(*leader, SIGKILL);
      if (auto sup = dir.ReadSupervisor(); sup && sup->Alive()) ::kill(sup->pid, SIGKILL);
    }
  }
}

// A child process with its stdin/stdout connected to the given fds (-1: inherit).
inline pid_t Spawn(const std::vector<std::string>& args, int stdin_fd, int stdout_fd) {
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
inline std::string ReadLine(int fd, std::chrono::milliseconds timeout) {
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
inline std::string Shell(const std::string& command) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  ::pclose(f);
  return out;
}

inline int WaitExit(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(20ms);
  }
  return -1;
}

// Expects `got` == `expected`, saying where they part: EXPECT_EQ of texts of thousands of lines
// would spend minutes (and gigabytes) on gtest's line diff when they differ.
inline void ExpectSameText(const std::string& got, const std::string& expected) {
  const size_t differ =
      std::mismatch(got.begin(), got.end(), expected.begin(), expected.end()).first - got.begin();
  EXPECT_TRUE(differ == got.size() && got.size() == expected.size())
      << "got " << got.size() << " bytes, expected " << expected.size()
      << "; they differ from byte " << differ << ": got \""
      << got.substr(differ >= 100 ? differ - 100 : 0, 300) << "\", expected \""
      << expected.substr(differ >= 100 ? differ - 100 : 0, 300) << "\"";
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
    KillJobsUnder(home_);  // jobs outlive their agent: a test's jobs end with the test
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

}  // namespace podrun::agent
