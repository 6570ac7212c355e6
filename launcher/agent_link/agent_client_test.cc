// Tests of AgentClient against the real podrun-agent binary over a unix socket.
#include "launcher/agent_link/agent_client.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "launcher/attempt/log_follower.h"
#include "launcher/base/error.h"

extern "C" char** environ;

namespace podrun {
namespace {

using namespace std::chrono_literals;

class AgentClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "agentclient.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    std::vector<std::string> args = {
        PODRUN_AGENT_BINARY, "serve", "--foreground", "--home", (dir_ / "agent").string(),
        "--idle-exit",       "0"};
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&agent_pid_, argv[0], &fa, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    ::close(fds[1]);
    std::string line;
    char c;
    pollfd pfd{fds[0], POLLIN, 0};
    while (::poll(&pfd, 1, 20'000) > 0 && ::read(fds[0], &c, 1) == 1 && c != '\n') line += c;
    ::close(fds[0]);
    const std::string socket = (dir_ / "agent" / "run" / "agent.sock").string();
    ASSERT_EQ(line, "PODRUN-AGENT READY 1 " PODRUN_VERSION " " + socket);
    client_ = std::make_unique<AgentClient>(
        grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
  }

  void TearDown() override {
    client_.reset();
    if (agent_pid_ > 0) {
      ::kill(agent_pid_, SIGKILL);
      ::waitpid(agent_pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }

  AgentPrepareRequest Request(const std::string& job_id, const std::string& run) {
    AgentPrepareRequest req;
    req.job_id = job_id;
    req.worker_id = 1;
    req.workdir = (dir_ / "work").string();
    req.env = {{"GREETING", "hello"}};
    req.run = run;
    return req;
  }

  std::filesystem::path dir_;
  pid_t agent_pid_ = -1;
  std::unique_ptr<AgentClient> client_;
};

TEST_F(AgentClientTest, RunsAJobAndStreamsItsLog) {
  AgentHello hello = client_->Hello();
  EXPECT_EQ(hello.protocol_version, 1u);
  EXPECT_EQ(hello.pid, agent_pid_);

  const std::string workdir =
      client_->Prepare(Request("job1", "echo $GREETING; echo oops >&2; exit 4")).workdir;
  EXPECT_EQ(workdir, std::filesystem::canonical(dir_ / "work").string());
  AgentStartReply start = client_->Start("job1", 1);
  EXPECT_GT(start.pid, 0);
  EXPECT_FALSE(start.already_started);

  std::string out, err;
  AgentLogStreamEnd end = client_->logs().StreamLogs(
      "job1", 1, 1, /*follow=*/true, [&](std::vector<LogRecord>&& records) {
        for (auto& r : records) {
          (r.stream == LogStream::kStdout ? out : err) += r.data;
        }
        return true;
      });
  EXPECT_EQ(out, "hello\n");
  EXPECT_EQ(err, "oops\n");
  ASSERT_TRUE(end.end);
  EXPECT_EQ(end.end->exit_code, 4);
  EXPECT_EQ(end.next_seq, 3u);
  EXPECT_FALSE(end.cancelled);

  auto status = client_->Status("job1", 1);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->state, AgentJobState::kExited);
  EXPECT_EQ(status->last_seq, 2u);
  EXPECT_FALSE(client_->Status("nope", 1));
}

TEST_F(AgentClientTest, StopAndCancel) {
  client_->Prepare(Request("sleeper", "sleep 1000"));
  client_->Start("sleeper", 1);
  // A follow on a silent job ends when the caller's stop token fires.
  std::stop_source stop;
  std::jthread canceller([&] {
    std::this_thread::sleep_for(200ms);
    stop.request_stop();
  });
  AgentLogStreamEnd end = client_->logs().StreamLogs(
      "sleeper", 1, 1, true, [](std::vector<LogRecord>&&) { return true; }, stop.get_token());
  EXPECT_TRUE(end.cancelled);
  EXPECT_FALSE(end.end);

  AgentStopReply stopped = client_->Stop("sleeper", 1, 5s);
  EXPECT_TRUE(stopped.was_running);
  EXPECT_TRUE(stopped.end.stopped_by_request);
  EXPECT_EQ(client_->Status("sleeper", 1)->state, AgentJobState::kStopped);
}

TEST_F(AgentClientTest, WhySeesTheJobsProcesses) {
  // A shell leading a Python program that dumps its stack on SIGUSR1 and a `sleep` that would
  // die of it.
  client_->Prepare(Request("stuck",
                           "sleep 60 & python3 -c '\n"
                           "import faulthandler, signal, sys, time\n"
                           "faulthandler.register(signal.SIGUSR1, file=sys.stderr)\n"
                           "def wait_for_collective():\n"
                           "    print(\"waiting\", flush=True)\n"
                           "    while True: time.sleep(0.05)\n"
                           "wait_for_collective()'; wait"));
  client_->Start("stuck", 1);
  // Until Python has printed (its handler is then registered).
  std::optional<AgentWhyReport> why;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  do {
    std::this_thread::sleep_for(100ms);
    why = client_->Why("stuck", 1, {.stacks = false, .cpu_window = 0ms});
    ASSERT_TRUE(why);
  } while (why->last_line != "waiting" && std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(why->last_line, "waiting");

  why = client_->Why(
      "stuck", 1, {.signal = SIGUSR1, .stacks = true, .cpu_window = 300ms, .stack_timeout = 20s});
  ASSERT_TRUE(why);
  EXPECT_EQ(why->state, AgentJobState::kRunning);
  EXPECT_EQ(why->signal_note, "SIGUSR1 sent to 1 of 3 processes (the others do not catch it)");
  ASSERT_EQ(why->processes.size(), 3u);
  EXPECT_EQ(why->processes[0].command, "bash");  // the leader first
  int signalled = 0;
  for (const AgentProcessReport& p : why->processes) {
    EXPECT_NE(p.state, AgentProcessState::kZombie);
    EXPECT_GT(p.started_ns, 0);
    EXPECT_GE(p.threads, 1u);
    if (p.signalled) {
      ++signalled;
      EXPECT_NE(p.cmdline.find("faulthandler"), std::string::npos);
    }
    if (why->stack_note.empty()) {  // gdb is on the PATH
      EXPECT_EQ(p.stack_tool, "gdb") << p.command << ": " << p.stack_error;
      EXPECT_NE(p.stack.find("#0"), std::string::npos);
    }
  }
  EXPECT_EQ(signalled, 1);
  EXPECT_GT(why->now_ns, 0);
  EXPECT_GE(why->gather_ms, 300u);

  // The dump reached the job's log.
  std::string err;
  const auto log_deadline = std::chrono::steady_clock::now() + 20s;
  while (err.find("wait_for_collective") == std::string::npos &&
         std::chrono::steady_clock::now() < log_deadline) {
    std::this_thread::sleep_for(100ms);
    err.clear();
    client_->logs().StreamLogs("stuck", 1, 1, /*follow=*/false,
                               [&](std::vector<LogRecord>&& records) {
                                 for (auto& r : records) {
                                   if (r.stream == LogStream::kStderr) err += r.data;
                                 }
                                 return true;
                               });
  }
  EXPECT_NE(err.find("wait_for_collective"), std::string::npos) << err;

  client_->Stop("stuck", 1, 5s);
  why = client_->Why("stuck", 1, {.stacks = false, .cpu_window = 0ms});
  ASSERT_TRUE(why);
  EXPECT_EQ(why->state, AgentJobState::kStopped);
  EXPECT_TRUE(why->processes.empty());
  EXPECT_FALSE(client_->Why("missing", 1, {}));
}

TEST_F(AgentClientTest, RefusalsAreErrors) {
  try {
    client_->Prepare(Request("bad/id", "true"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUnreachable);
    EXPECT_NE(std::string(e.what()).find("agent Prepare: INVALID_ARGUMENT"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(client_->Start("never-prepared", 1), Error);
  // A dead agent is unreachable.
  ::kill(agent_pid_, SIGKILL);
  ::waitpid(agent_pid_, nullptr, 0);
  agent_pid_ = -1;
  EXPECT_THROW(client_->Hello(), Error);
}

}  // namespace
}  // namespace podrun

namespace podrun {
namespace {

// An agent that has no such job refuses the stream: the follower gives up at once (no
// reconnect loop), naming the refusal.
TEST_F(AgentClientTest, RefusedStreamIsNotTakenForALostConnection) {
  std::shared_ptr<AgentClient> client(std::move(client_));
  try {
    client->logs().StreamLogs("no-such-job", 1, 1, true,
                              [](std::vector<LogRecord>&&) { return true; });
    ADD_FAILURE() << "no error";
  } catch (const AgentRefusal& e) {
    EXPECT_NE(std::string(e.what()).find("NOT_FOUND"), std::string::npos) << e.what();
  }
  LogFollowParams params;
  params.job_id = "no-such-job";
  params.description = "w0 (local)";
  int reconnects = 0;
  LogFollowHooks hooks{[&] { return client; },
                       [&] {
                         ++reconnects;
                         return client;
                       },
                       [](const std::string&) {},
                       {}};
  const auto began = std::chrono::steady_clock::now();
  LogFollowResult r = FollowLog(params, hooks, [](std::vector<LogRecord>&&) { return true; });
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  EXPECT_EQ(reconnects, 0);
  EXPECT_NE(r.lost.find("refused"), std::string::npos) << r.lost;
  client_.reset();
}

}  // namespace
}  // namespace podrun
