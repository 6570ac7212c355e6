// Integration tests of the SSH layer against a real 3-worker testpod: the session, its
// channels and the agent tunnel used as a library, and the trust boundaries seen from the
// command line (docs/design.md decisions 13 and 14): ssh_config cannot weaken host keys or override
// an explicit port, and the launcher's state is private.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "launcher/agent_link/agent_tunnel.h"
#include "launcher/base/error.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_options.h"
#include "launcher/ssh/ssh_session.h"
#include "proto/agent.grpc.pb.h"
#include "tests/run_command.h"
#include "tests/testpod.h"

namespace podrun::testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kPodId = 17;

class SshTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pod_ = std::make_unique<TestPod>(kWorkers, kPodId); }
  static void TearDownTestSuite() { pod_.reset(); }

  // SSH options that reach the pod's workers with its key and known_hosts.
  static SshOptions PodSsh() {
    SshOptions o;
    o.identity = pod_->identity();
    o.known_hosts = pod_->known_hosts();
    o.ssh_config = EmptyConfig();
    o.connect_timeout = std::chrono::seconds(20);
    // Sessions that start keepalives fail within 3 intervals on a stalled link, not hang.
    o.keepalive_interval = std::chrono::seconds(3);
    return o;
  }
  static std::string EmptyConfig() {
    std::string path = ::testing::TempDir() + "/ssh-test-empty-config";
    std::ofstream(path) << "# nothing\n";
    return path;
  }
  static HostSpec Worker(int i) { return HostSpec{"root", pod_->address(i), {}}; }

  // `podrun ARGS` with a PODRUN_HOME of this test's own; stderr merged.
  static CommandResult Podrun(const std::string& home, const std::string& args) {
    return RunCommand("env PODRUN_HOME=" + home + " " + std::string(PODRUN_BINARY) + " " + args);
  }

  // A known_hosts in which worker `changed`'s address carries another key; returns its path,
  // and the fingerprint of the worker's real key in *fingerprint.
  static std::string KnownHostsWithChangedKey(int changed, std::string* fingerprint) {
    std::string dir = ::testing::TempDir() + "/ssh-test-changed-key";
    RunCommand("rm -rf " + dir + " && mkdir -p " + dir + " && ssh-keygen -q -t ed25519 -N '' -f " +
               dir + "/other");
    std::string address = pod_->address(changed);
    std::string other_key = RunCommand("cut -d' ' -f1,2 " + dir + "/other.pub").output;
    other_key.pop_back();
    RunCommand("grep -v '^" + address + " ' " + pod_->known_hosts() + " > " + dir +
               "/known_hosts && echo '" + address + " " + other_key + "' >> " + dir +
               "/known_hosts");
    *fingerprint = RunCommand("ssh-keygen -lf " + pod_->dir() + "/w" + std::to_string(changed) +
                              "/ssh_host_ed25519_key.pub | cut -d' ' -f2")
                       .output;
    fingerprint->pop_back();
    return dir + "/known_hosts";
  }

  // An ssh_config that says everything that would weaken host keys, for every host.
  static std::string WeakeningConfig() {
    std::string path = ::testing::TempDir() + "/ssh-test-weakening-config";
    std::ofstream(path) << "Host *\n"
                           "  StrictHostKeyChecking no\n"
                           "  UserKnownHostsFile /dev/null\n"
                           "  GlobalKnownHostsFile /dev/null\n"
                           "  IdentityFile "
                        << pod_->identity() << "\n";
    return path;
  }

  static std::unique_ptr<TestPod> pod_;
};

std::unique_ptr<TestPod> SshTest::pod_;
int round_robin = 0;

struct ExecResult {
  std::string out, err;
  ExitStatus status;
};

// Connects to `target` and runs `command` on one exec channel, feeding it `input` (then EOF)
// when given.
asio::awaitable<ExecResult> ConnectAndExec(HostSpec target, SshOptions options, std::string command,
                                           std::string input = "") {
  auto session = co_await SshSession::Connect(target, options);
  session->StartKeepalive();
  auto channel = co_await SshChannel::Exec(*session, command);
  if (!input.empty()) co_await channel->Write(input);
  co_await channel->SendEof();
  ExecResult r;
  r.status = co_await channel->Drain([&](Stream stream, std::string_view data) {
    (stream == Stream::kStdout ? r.out : r.err).append(data);
  });
  co_return r;
}

TEST_F(SshTest, ExecGivesBothStreamsAndTheExitStatus) {
  EventLoop loop;
  ExecResult r = loop.Run(
      ConnectAndExec(Worker(1), PodSsh(), "hostname; echo to-stderr >&2; seq 1 20000; exit 7"));
  ASSERT_TRUE(r.status.exit_code.has_value());
  EXPECT_EQ(7, *r.status.exit_code);
  EXPECT_EQ(0u, r.out.find("w1\n")) << r.out.substr(0, 100);
  EXPECT_NE(std::string::npos, r.out.find("\n19999\n20000\n"));
  EXPECT_EQ("to-stderr\n", r.err);
}

TEST_F(SshTest, ExecReportsASignalAndStdinReachesTheCommand) {
  EventLoop loop;
  ExecResult killed = loop.Run(ConnectAndExec(Worker(0), PodSsh(), "kill -KILL $$"));
  EXPECT_FALSE(killed.status.exit_code.has_value());
  EXPECT_EQ("KILL", killed.status.signal);
  ExecResult cat =
      loop.Run(ConnectAndExec(Worker(0), PodSsh(), "cat; echo done", std::string(300 * 1024, 'x')));
  EXPECT_EQ(std::string(300 * 1024, 'x') + "done\n", cat.out);
  EXPECT_EQ(0, cat.status.exit_code.value_or(-1));
}

TEST_F(SshTest, ChannelClosedByTheServerEndsTheDrain) {
  // The command closes its output early and lives on a little: Drain ends at the channel's
  // EOF and close, with the exit status, and the session stays usable for another channel.
  EventLoop loop;
  auto flow = []() -> asio::awaitable<std::pair<ExitStatus, std::string>> {
    auto session = co_await SshSession::Connect(Worker(2), PodSsh());
    session->StartKeepalive();
    auto first = co_await SshChannel::Exec(*session, "echo early; exec >&- 2>&-; sleep 1; exit 4");
    ExitStatus status = co_await first->Drain([](Stream, std::string_view) {});
    auto second = co_await SshChannel::Exec(*session, "echo again");
    std::string out;
    co_await second->Drain([&](Stream, std::string_view d) { out.append(d); });
    co_return std::make_pair(status, out);
  };
  auto [status, out] = loop.Run(flow());
  EXPECT_EQ(4, status.exit_code.value_or(-1));
  EXPECT_EQ("again\n", out);
}

TEST_F(SshTest, TwoChannelsOfOneSessionBothStreamToTheEnd) {
  // launch's shape: two busy channels on one session (the tunnel and the bulk log channel).
  // libssh reads the socket for whichever channel asks and keeps what belongs to the other in
  // that channel's buffer; both streams must still end, whole, without a keepalive's help.
  EventLoop loop;
  struct Streams {
    std::unique_ptr<SshSession> session;
    std::unique_ptr<SshChannel> bursts, steady;
    size_t a = 0, b = 0;
    int done = 0;
    std::unique_ptr<asio::steady_timer> limit;
  };
  auto drain = [](std::shared_ptr<Streams> s, SshChannel* c, size_t* n) -> asio::awaitable<void> {
    co_await c->Drain([n](Stream, std::string_view d) { *n += d.size(); });
    if (++s->done == 2) s->limit->cancel();
  };
  auto flow = [&]() -> asio::awaitable<std::pair<size_t, size_t>> {
    auto s = std::make_shared<Streams>();  // kept by both drains: a stuck one touches no frame
    s->session = co_await SshSession::Connect(Worker(1), PodSsh());
    s->bursts = co_await SshChannel::Exec(
        *s->session, "for i in $(seq 100); do head -c 100000 /dev/zero; sleep 0.01; done");
    s->steady = co_await SshChannel::Exec(*s->session, "head -c 10000000 /dev/zero");
    auto executor = co_await asio::this_coro::executor;
    s->limit = std::make_unique<asio::steady_timer>(executor, std::chrono::seconds(60));
    asio::co_spawn(executor, drain(s, s->bursts.get(), &s->a), asio::detached);
    asio::co_spawn(executor, drain(s, s->steady.get(), &s->b), asio::detached);
    boost::system::error_code ignored;
    co_await s->limit->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    co_return std::make_pair(s->a, s->b);
  };
  auto [a, b] = loop.Run(flow());
  EXPECT_EQ(10000000u, a);
  EXPECT_EQ(10000000u, b);
}

TEST_F(SshTest, UnixSocketChannelToAMissingSocketFailsAndTheSessionLivesOn) {
  EventLoop loop;
  auto flow = []() -> asio::awaitable<std::pair<std::string, bool>> {
    auto session = co_await SshSession::Connect(Worker(0), PodSsh());
    session->StartKeepalive();
    std::string error;
    try {
      co_await SshChannel::OpenUnixSocket(*session, "/tmp/no-such-socket");
    } catch (const Error& e) {
      error = e.what();
    }
    co_return std::make_pair(error, ssh_is_connected(session->raw()) == 1);
  };
  auto [error, connected] = loop.Run(flow());
  EXPECT_NE(std::string::npos, error.find("/tmp/no-such-socket")) << error;
  EXPECT_TRUE(connected);  // a refusal, not a broken connection (ssh_channel.h)
}

TEST_F(SshTest, AgentTunnelCarriesGrpcToTheAgentsUnixSocket) {
  EventLoop loop;
  std::shared_ptr<SshSession> session;
  std::unique_ptr<AgentTunnel> tunnel;
  // Start an agent on worker 0, in a home of this test's own, idle-exiting soon after the test.
  // The binary is copied into the worker's home (its /root, from this host <pod dir>/w0/home):
  // a build tree under /root or /tmp is not what the worker sees there.
  const std::string copy = pod_->dir() + "/w0/home/ssh-test-podrun-agent";
  std::filesystem::copy_file(PODRUN_AGENT, copy, std::filesystem::copy_options::overwrite_existing);
  std::string serve = "/root/ssh-test-podrun-agent serve --home /tmp/ssh-test-agent --idle-exit 5";
  ExecResult started = loop.Run(ConnectAndExec(Worker(0), PodSsh(), serve));
  ASSERT_EQ(0, started.status.exit_code.value_or(-1)) << started.out << started.err;
  std::string prefix = "PODRUN-AGENT READY ";
  ASSERT_EQ(0u, started.out.find(prefix)) << started.out;
  std::string socket = started.out.substr(started.out.rfind(' ') + 1);
  socket.pop_back();  // the newline
  std::shared_ptr<grpc::Channel> channel =
      loop.Run([&]() -> asio::awaitable<std::shared_ptr<grpc::Channel>> {
        session = co_await SshSession::Connect(Worker(0), PodSsh());
        auto unix_channel = co_await SshChannel::OpenUnixSocket(*session, socket);
        tunnel = std::make_unique<AgentTunnel>(session, std::move(unix_channel));
        co_return tunnel->MakeGrpcChannel();
      }());
  auto stub = agent::v1::Agent::NewStub(channel);
  for (int i = 0; i < 3; ++i) {  // several calls over the one tunnel
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    agent::v1::HelloRequest request;
    agent::v1::HelloReply reply;
    grpc::Status status = stub->Hello(&ctx, request, &reply);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ("w0", reply.hostname());
    EXPECT_EQ("/tmp/ssh-test-agent", reply.home());
  }
  // The agent made its home private (decision 14).
  EXPECT_EQ("700\n", pod_->Exec(0, "stat -c %a /tmp/ssh-test-agent").output);
  loop.Run([&]() -> asio::awaitable<void> {
    tunnel.reset();
    session.reset();
    co_return;
  }());
}

TEST_F(SshTest, KeepaliveDueWhileTheSessionIsDestroyedTouchesNothing) {
  // The keepalive timer fires in the same turn of the loop as the wait that destroys the
  // session, and is queued after it: its handler runs once the session is gone (it must find
  // nothing to touch: ssh_session.h). Repeated, since each round is one chance of a crash.
  EventLoop loop;
  for (int round = 0; round < 5; ++round) {
    loop.Run([]() -> asio::awaitable<void> {
      SshOptions options = PodSsh();
      options.keepalive_interval = std::chrono::milliseconds(20);
      auto session = co_await SshSession::Connect(Worker(round_robin++ % kWorkers), options);
      session->StartKeepalive();
      asio::steady_timer earlier(co_await asio::this_coro::executor, std::chrono::milliseconds(10));
      std::this_thread::sleep_for(std::chrono::milliseconds(40));  // both timers are now due
      co_await earlier.async_wait(asio::use_awaitable);
      session.reset();  // the keepalive's completion is already queued behind this one
      asio::steady_timer after(co_await asio::this_coro::executor, std::chrono::milliseconds(30));
      co_await after.async_wait(asio::use_awaitable);  // let it run
    }());
  }
  // The loop survived; a new session on it still works.
  ExecResult r = loop.Run(ConnectAndExec(Worker(0), PodSsh(), "echo alive"));
  EXPECT_EQ("alive\n", r.out);
}

// This process's open sockets (its own /proc/self/fd): a session's end must close its own.
int OpenSockets() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

TEST_F(SshTest, EverySessionClosesItsSocketWhetherItWasUsedOrRefused) {
  // libssh never closes a socket it was given (SSH_OPTIONS_FD): a connection holder that
  // outlives hundreds of sessions, and a keeper that reconnects for a week, must not keep
  // one socket (and one sshd on the worker) per session that ended.
  std::string fingerprint;
  const std::string changed = KnownHostsWithChangedKey(1, &fingerprint);
  EventLoop loop;
  // The loop's own sockets exist from here on: count after a first session came and went.
  loop.Run(ConnectAndExec(Worker(0), PodSsh(), "true"));
  const int before = OpenSockets();
  for (int round = 0; round < 6; ++round) {
    ExecResult r = loop.Run(ConnectAndExec(Worker(round % kWorkers), PodSsh(), "echo used"));
    EXPECT_EQ("used\n", r.out);
    SshOptions refused = PodSsh();
    refused.known_hosts = changed;
    EXPECT_THROW(loop.Run(ConnectAndExec(Worker(1), refused, "true")), Error);
  }
  EXPECT_EQ(before, OpenSockets()) << "12 sessions ended; their sockets must be closed";
}

// The cipher a session to `target` encrypts with, as libssh negotiated it.
asio::awaitable<std::string> NegotiatedCipher(HostSpec target, SshOptions options) {
  auto session = co_await SshSession::Connect(target, options);
  const char* cipher = ssh_get_cipher_out(session->raw());
  co_return cipher == nullptr ? "" : cipher;
}

TEST_F(SshTest, AesGcmIsOfferedFirstWhereTheCpuHasAesAndSshConfigsCiphersWin) {
  EventLoop loop;
  const std::string chosen = loop.Run(NegotiatedCipher(Worker(0), PodSsh()));
  EXPECT_EQ(
      PreferredCiphers() != nullptr ? "aes128-gcm@openssh.com" : "chacha20-poly1305@openssh.com",
      chosen);
  const std::string config = ::testing::TempDir() + "/ssh-test-ciphers-config";
  std::ofstream(config) << "Host *\n  Ciphers chacha20-poly1305@openssh.com,aes256-ctr\n";
  SshOptions with_config = PodSsh();
  with_config.ssh_config = config;
  EXPECT_EQ("chacha20-poly1305@openssh.com", loop.Run(NegotiatedCipher(Worker(0), with_config)));
}

TEST_F(SshTest, ChangedHostKeyIsRefusedWhateverSshConfigSaysExec) {
  std::string fingerprint;
  std::string known = KnownHostsWithChangedKey(1, &fingerprint);
  for (int i = 0; i < kWorkers; ++i) pod_->Exec(i, "rm -f /tmp/ssh-test-ran");
  CommandResult r =
      RunCommand(std::string(PODRUN_BINARY) + " exec --hosts @" + pod_->host_file() + " -F " +
                 WeakeningConfig() + " --known-hosts " + known + " -- 'touch /tmp/ssh-test-ran'");
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED for " + pod_->address(1)))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find(fingerprint)) << r.output;
  EXPECT_NE(0, pod_->Exec(1, "test -e /tmp/ssh-test-ran").exit_code) << "ran on the changed host";
  EXPECT_EQ(0, pod_->Exec(0, "test -e /tmp/ssh-test-ran").exit_code);  // the others did run
  // The key was not recorded anywhere either.
  EXPECT_EQ(1, std::stoi(RunCommand("grep -c '^" + pod_->address(1) + " ' " + known).output));
}

TEST_F(SshTest, ChangedHostKeyIsRefusedWhateverSshConfigSaysLaunch) {
  std::string fingerprint;
  std::string known = KnownHostsWithChangedKey(2, &fingerprint);
  for (int i = 0; i < kWorkers; ++i) pod_->Exec(i, "rm -f /tmp/ssh-test-ran");
  std::string home = ::testing::TempDir() + "/ssh-test-home-launch";
  RunCommand("rm -rf " + home);
  std::string spec = ::testing::TempDir() + "/ssh-test-ran.yaml";
  std::ofstream(spec) << "name: ran\nrun: touch /tmp/ssh-test-ran\n";
  CommandResult r = Podrun(home, "launch " + spec + " --hosts @" + pod_->host_file() + " -F " +
                                     WeakeningConfig() + " --known-hosts " + known);
  EXPECT_EQ(3, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("HOST KEY CHANGED for " + pod_->address(2)))
      << r.output;
  EXPECT_NE(std::string::npos, r.output.find(fingerprint)) << r.output;
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_NE(0, pod_->Exec(i, "test -e /tmp/ssh-test-ran").exit_code) << "ran on w" << i;
  }
}

TEST_F(SshTest, ExplicitPortWinsOverSshConfigPort) {
  std::string config = ::testing::TempDir() + "/ssh-test-port-config";
  std::ofstream(config) << "Host *\n  Port 2222\n  User root\n";
  std::string base = std::string(PODRUN_BINARY) + " exec -i " + pod_->identity() +
                     " --known-hosts " + pod_->known_hosts() + " -F " + config +
                     " --connect-timeout 3 --hosts ";
  // The config is read: without a port of podrun's, its 2222 (where nothing listens) is used.
  CommandResult config_port = RunCommand(base + pod_->address(0) + " -- hostname");
  EXPECT_EQ(3, config_port.exit_code) << config_port.output;
  EXPECT_NE(std::string::npos, config_port.output.find(":2222")) << config_port.output;
  // An explicit host:22 wins, and so does -p 22.
  CommandResult explicit_port = RunCommand(base + pod_->address(0) + ":22 -- hostname");
  EXPECT_EQ(0, explicit_port.exit_code) << explicit_port.output;
  EXPECT_NE(std::string::npos, explicit_port.output.find("[w0] w0")) << explicit_port.output;
  CommandResult default_port = RunCommand(base + pod_->address(0) + " -p 22 -- hostname");
  EXPECT_EQ(0, default_port.exit_code) << default_port.output;
}

TEST_F(SshTest, FreshPodrunHomeIsPrivateAfterALaunch) {
  std::string home = ::testing::TempDir() + "/ssh-test-home-private";
  RunCommand("rm -rf " + home);
  std::string spec = ::testing::TempDir() + "/ssh-test-private.yaml";
  std::ofstream(spec) << "name: private\nrun: echo hello; echo oops >&2\n";
  // Run from a permissive umask: podrun's own must win for its state.
  CommandResult r = RunCommand("umask 022; env PODRUN_HOME=" + home + " " + PODRUN_BINARY +
                               " launch " + spec + " --hosts @" + pod_->host_file() + " -i " +
                               pod_->identity() + " --known-hosts " + pod_->known_hosts());
  ASSERT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ("700\n", RunCommand("stat -c %a " + home).output);
  EXPECT_NE("", RunCommand("find " + home + " -type f").output);  // something was written
  CommandResult open = RunCommand("find " + home + " -perm /077");
  EXPECT_EQ("", open.output) << "readable by group or others";
  // On the workers too: the agent's directory is private.
  for (int i = 0; i < kWorkers; ++i) {
    EXPECT_EQ("", pod_->Exec(i, "find ~/.podrun -perm /077").output) << "w" << i;
  }
}

TEST_F(SshTest, PodrunHomeOpenToOthersOrOfAnotherUserIsRefused) {
  std::string home = ::testing::TempDir() + "/ssh-test-home-open";
  RunCommand("rm -rf " + home + " && mkdir -p " + home + " && chmod 755 " + home);
  CommandResult open = Podrun(home, "ls");
  EXPECT_EQ(2, open.exit_code) << open.output;
  EXPECT_NE(std::string::npos, open.output.find("chmod 700 " + home)) << open.output;

  RunCommand("chmod 700 " + home + " && chown 65534:65534 " + home);
  CommandResult theirs = Podrun(home, "ls");
  EXPECT_EQ(2, theirs.exit_code) << theirs.output;
  EXPECT_NE(std::string::npos, theirs.output.find("uid 65534")) << theirs.output;

  RunCommand("chown 0:0 " + home + " && mkdir -p " + home + "-elsewhere && ln -s " + home +
             "-elsewhere " + home + "/jobs");
  CommandResult linked = Podrun(home, "ls");
  EXPECT_EQ(2, linked.exit_code) << linked.output;
  EXPECT_NE(std::string::npos, linked.output.find("symbolic link")) << linked.output;
}

TEST_F(SshTest, BadHostsAndUsersAreUsageErrors) {
  std::string base = std::string(PODRUN_BINARY) + " exec --hosts ";
  for (std::string bad :
       {"'w0;touch /tmp/x'", "-oProxyCommand=id", "'$(id)@w0'", "w0:0", "w0:65536", "'w0 w1'"}) {
    CommandResult r = RunCommand(base + bad + " -- true");
    EXPECT_EQ(2, r.exit_code) << bad << ": " << r.output;
  }
  std::string file = ::testing::TempDir() + "/ssh-test-bad-hosts";
  std::ofstream(file) << pod_->hosts()[0] << "\n# ok\nroot@w1|x\n";
  CommandResult r = RunCommand(base + "@" + file + " -- true");
  EXPECT_EQ(2, r.exit_code) << r.output;
  EXPECT_NE(std::string::npos, r.output.find(file + ":3")) << r.output;
  CommandResult user = RunCommand(base + pod_->address(0) + " -l '-oX' -- true");
  EXPECT_EQ(2, user.exit_code) << user.output;
}

TEST_F(SshTest, LocalWorkersDoNotInheritTheLaunchersEnvironment) {
  std::string home = ::testing::TempDir() + "/ssh-test-home-local";
  RunCommand("rm -rf " + home);
  CommandResult r = RunCommand("env PODRUN_SSH_TEST_SECRET=hunter2 PODRUN_HOME=" + home + " " +
                               PODRUN_BINARY + " exec --local 2 -- env");
  EXPECT_EQ(0, r.exit_code) << r.output;
  EXPECT_EQ(std::string::npos, r.output.find("hunter2")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w1] HOME=" + home + "/local/w1")) << r.output;
  EXPECT_NE(std::string::npos, r.output.find("[w0] PATH=")) << r.output;

  // launch --local: neither the local agents nor their jobs see it; the job's own env arrives.
  std::string spec = ::testing::TempDir() + "/ssh-test-local-env.yaml";
  std::ofstream(spec) << "name: localenv\nenv: {FROM_SPEC: yes-spec}\nrun: env\n";
  CommandResult launch = RunCommand("env PODRUN_SSH_TEST_SECRET=hunter2 PODRUN_HOME=" + home + " " +
                                    PODRUN_BINARY + " launch " + spec + " --local 2");
  KillLocalAgents(home);
  EXPECT_EQ(0, launch.exit_code) << launch.output;
  EXPECT_EQ(std::string::npos, launch.output.find("hunter2")) << launch.output;
  EXPECT_NE(std::string::npos, launch.output.find("[w1] FROM_SPEC=yes-spec")) << launch.output;
  EXPECT_EQ("", RunCommand("grep -rl hunter2 " + home + " || true").output);
}

}  // namespace
}  // namespace podrun::testing
