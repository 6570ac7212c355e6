// The agent's lifetime: start (or find the running agent), serve gRPC on the unix socket,
// exit when idle (see serve.h).
#include "worker/serve.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <zlib.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "proto/agent.grpc.pb.h"
#include "proto/private_state.h"
#include "proto/process_identity.h"
#include "proto/protocol_version.h"
#include "worker/daemon.h"
#include "worker/host/tpu_metadata.h"
#include "worker/job/job_runner.h"
#include "worker/rpc/agent_service.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kLockTimeout = std::chrono::milliseconds(30'000);
constexpr auto kProbeTimeout = std::chrono::seconds(3);
constexpr auto kIdleCheckInterval = std::chrono::seconds(1);
constexpr auto kPruneInterval = std::chrono::hours(1);
constexpr auto kShutdownGrace = std::chrono::seconds(2);
constexpr auto kHandOverWait = std::chrono::seconds(15);
// Launchers send keepalive pings through the tunnel; accept them this often, without strikes.
constexpr int kMinPingIntervalMs = 1000;

// Creates the agent's directory (0700) or checks that an existing one is private, and refuses
// symbolic links where its state goes (proto/private_state.h).
void PrepareDirectories(const std::filesystem::path& home) {
  namespace fs = std::filesystem;
  if (!fs::exists(home)) {
    fs::create_directories(home);
    fs::permissions(home, fs::perms::owner_all);
  }
  if (auto problem = PrivateDirectoryProblem(home)) {
    throw std::runtime_error("refusing to keep the agent's state in " + home.string() + ": " +
                             *problem);
  }
  for (const char* entry : {"run", "jobs", "agent.log", "blobs", "sync", "stamps"}) {
    if (auto problem = SymlinkProblem(home / entry)) throw std::runtime_error(*problem);
  }
  fs::create_directories(home / "run");
  fs::permissions(home / "run", fs::perms::owner_all);  // even if it existed
}

bool Idle(const ServeOptions& options, const JobRunner& runner, const ActivityTracker& activity) {
  return options.idle_exit.count() > 0 && runner.RunningJobs() == 0 &&
         activity.IdleFor() >= options.idle_exit;
}

// The daemon (or foreground) part of Serve, once the announcement's destination is known.
int RunAgent(const ServeOptions& options, Announcer& announcer) {
  const std::filesystem::path socket_path = AgentSocketPath(options.home);
  const std::filesystem::path lock_path = options.home / "run" / "agent.lock";
  FileLock lock = FileLock::Acquire(lock_path, kLockTimeout);
  if (auto running = ProbeAgent(socket_path)) {
    if (running->build_id == BuildId()) {
      announcer.Ready(running->protocol_version, running->agent_version, socket_path.string());
      return 0;
    }
    // Another build (older or newer) runs: it hands over to us. Its jobs run on under their
    // supervisors, and we read them from their files. The lock is let go meanwhile: an agent of
    // an older build takes it on its way out.
    std::fprintf(stderr, "podrun-agent %s: taking over from agent %s (pid %d)\n", PODRUN_VERSION,
                 running->agent_version.c_str(), running->pid);
    lock.Release();
    const bool handed_over = HandOver(socket_path, running->pid);
    lock = FileLock::Acquire(lock_path, kLockTimeout);
    if (auto now = ProbeAgent(socket_path)) {  // another serve of ours may have won meanwhile
      if (now->build_id == BuildId()) {
        announcer.Ready(now->protocol_version, now->agent_version, socket_path.string());
        return 0;
      }
      announcer.Error("the running agent (pid " + std::to_string(now->pid) + ", version " +
                      now->agent_version + ") did not hand over" +
                      (handed_over ? "" : " (it refuses while it holds jobs itself)") +
                      "; stop it with kill " + std::to_string(now->pid));
      return 1;
    }
  }

  // Asked now, in the background: off Google Cloud the metadata server's timeout would
  // otherwise hold up the first Hello. Joined when RunAgent returns (within that timeout), so
  // it never runs on while the process exits.
  std::jthread ask_metadata([] { TpuWorkerNumber(); });
  // Jobs' supervisors are this very binary, in its `supervise` mode.
  JobRunner runner(options.home, "/proc/self/exe");
  ActivityTracker activity;
  std::mutex mu;
  std::condition_variable cv;
  bool shutdown_requested = false, handover = false;
  AgentInfo info{PODRUN_VERSION, options.home.string(), options.idle_exit, WallClockNs(),
                 BuildId()};
  AgentService service(info, runner, activity, [&](bool hand_over) {
    std::lock_guard l(mu);
    shutdown_requested = true;
    handover = hand_over;
    cv.notify_all();
  });

  ::unlink(socket_path.c_str());  // stale: nobody answered the probe, and we hold the lock
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path.string(), grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kMinPingIntervalMs);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    announcer.Error("cannot listen on unix:" + socket_path.string());
    return 1;
  }
  // The handlers use this frame's locals (runner, mu, cv, ...): however RunAgent leaves (an
  // exception too), the server is shut down, its handlers finished, before they go.
  struct StopServing {
    AgentService& service;
    grpc::Server& server;
    bool stopped = false;
    void Stop() {
      if (std::exchange(stopped, true)) return;
      service.BeginShutdown();  // following log streams end promptly
      server.Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    }
    ~StopServing() { Stop(); }
  } stop_serving{service, *server};
  ::chmod(socket_path.c_str(), 0600);
  lock.Release();
  announcer.Ready(kProtocolVersion, PODRUN_VERSION, socket_path.string());
  std::fprintf(stderr, "podrun-agent %s: pid %d serving unix:%s\n", PODRUN_VERSION, ::getpid(),
               socket_path.c_str());

  // Finished jobs older than the retention go, now and then once an hour.
  PruneFinishedJobs(options.home, options.keep_finished);
  RemoveStaleSupervisorSockets(options.home);
  auto next_prune = std::chrono::steady_clock::now() + kPruneInterval;
  while (true) {
    if (std::chrono::steady_clock::now() >= next_prune) {
      PruneFinishedJobs(options.home, options.keep_finished);
      next_prune = std::chrono::steady_clock::now() + kPruneInterval;
    }
    {
      std::unique_lock l(mu);
      cv.wait_for(l, kIdleCheckInterval, [&] { return shutdown_requested; });
      if (handover) break;  // the new agent holds the lock and takes the socket
      if (!shutdown_requested && !Idle(options, runner, activity)) continue;
    }
    // Leave under the lock, so that a concurrent start waits and then starts a fresh agent.
    lock = FileLock::Acquire(lock_path, kLockTimeout);
    std::lock_guard l(mu);
    if (shutdown_requested || Idle(options, runner, activity)) break;
    lock.Release();
  }
  std::fprintf(stderr, "podrun-agent: exiting (%s)\n",
               handover             ? "handed over"
               : shutdown_requested ? "shutdown"
                                    : "idle");
  stop_serving.Stop();
  if (!handover) ::unlink(socket_path.c_str());  // else it is the new agent's by now
  return 0;
}

}  // namespace

std::filesystem::path DefaultHome() { return UserHome() / ".podrun"; }

std::filesystem::path AgentSocketPath(const std::filesystem::path& home) {
  return home / "run" / "agent.sock";
}

std::optional<RunningAgent> ProbeAgent(const std::filesystem::path& socket_path) {
  struct stat st {};
  if (::stat(socket_path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return std::nullopt;
  auto channel =
      grpc::CreateChannel("unix:" + socket_path.string(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kProbeTimeout);
  v1::HelloRequest req;  // protocol_version 0: a probe
  v1::HelloReply reply;
  if (!stub->Hello(&ctx, req, &reply).ok()) return std::nullopt;
  return RunningAgent{reply.protocol_version(), reply.agent_version(), reply.build_id(),
                      reply.pid()};
}

const std::string& BuildId() {
  static const std::string id = [] {
    UniqueFd fd(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!fd) return std::string("unknown");
    uLong crc = crc32(0, nullptr, 0);
    uint64_t size = 0;
    std::vector<unsigned char> buf(1 << 20);
    for (ssize_t n; (n = ::read(fd.get(), buf.data(), buf.size())) > 0;) {
      crc = crc32(crc, buf.data(), static_cast<uInt>(n));
      size += static_cast<uint64_t>(n);
    }
    char text[64];
    std::snprintf(text, sizeof text, "%llu-%08lx", static_cast<unsigned long long>(size), crc);
    return std::string(text);
  }();
  return id;
}

bool HandOver(const std::filesystem::path& socket_path, int pid) {
  const auto old = ProcessIdentity::Of(pid);
  auto channel =
      grpc::CreateChannel("unix:" + socket_path.string(), grpc::InsecureChannelCredentials());
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kProbeTimeout);
  v1::ShutdownRequest req;
  req.set_handover(true);
  v1::ShutdownReply reply;
  if (!stub->Shutdown(&ctx, req, &reply).ok()) return false;
  const auto deadline = Clock::now() + kHandOverWait;
  while (old && old->Alive()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int Serve(const ServeOptions& options) {
  ::signal(SIGPIPE, SIG_IGN);
  const std::filesystem::path socket_path = AgentSocketPath(options.home);
  try {
    PrepareDirectories(options.home);
  } catch (const std::exception& e) {
    Announcer().Error(e.what());
    return 1;
  }
  if (socket_path.string().size() >= sizeof(sockaddr_un{}.sun_path)) {
    Announcer().Error("socket path too long for a unix socket: " + socket_path.string());
    return 1;
  }
  std::optional<Announcer> announcer;
  if (options.foreground) {
    announcer.emplace();
  } else {
    try {
      Daemonized d = Daemonize(options.home / "agent.log");
      if (!d.in_daemon) return d.exit_code;
      announcer.emplace(std::move(d.announcer));
    } catch (const std::exception& e) {
      Announcer().Error(e.what());
      return 1;
    }
  }
  try {
    return RunAgent(options, *announcer);
  } catch (const std::exception& e) {
    announcer->Error(e.what());
    return 1;
  }
}

}  // namespace podrun::agent
