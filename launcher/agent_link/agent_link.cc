// The two AgentLinks: SSH (bootstrap + tunnel) and local (an agent per worker home).
#include "launcher/agent_link/agent_link.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/create_channel_posix.h>
#include <grpcpp/security/credentials.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "launcher/agent_link/agent_bootstrap.h"
#include "launcher/agent_link/agent_tunnel.h"
#include "launcher/agent_link/local_process.h"
#include "launcher/agent_link/ssh_log_stream.h"
#include "launcher/base/error.h"
#include "launcher/persist/held_exec.h"
#include "launcher/persist/held_tunnel.h"
#include "launcher/persist/holder_client.h"
#include "launcher/ssh/ssh_session.h"
#include "proto/private_state.h"
#include "proto/spawn.h"

namespace podrun {
namespace {

class SshAgentLink : public AgentLink {
 public:
  SshAgentLink(const PodWorker& worker, const SshOptions& ssh, const AgentLinkContext& ctx)
      : worker_(worker), ssh_(ssh), ctx_(ctx) {}

  ~SshAgentLink() override {
    // SSH objects belong to the loop thread.
    ctx_.loop->Run([this]() -> asio::awaitable<void> {
      tunnel_.reset();
      session_.reset();
      co_return;
    }());
  }

  std::shared_ptr<grpc::Channel> Connect() override {
    // One connect at a time per link: ConnectOnLoop replaces session_ and tunnel_, and a second
    // one on the loop would reset them under the first between its co_awaits. The state lock
    // (mutex_) is not held meanwhile, so peer_address() answers while a slow worker connects.
    std::lock_guard connecting(connect_mutex_);
    try {
      return ctx_.loop->Run(ConnectOnLoop());
    } catch (Error& e) {
      e.AddContext(description());
      throw;
    }
  }

  std::string peer_address() const override {
    std::lock_guard lock(mutex_);
    return address_.empty() ? worker_.host.host : address_;
  }

  std::string description() const override {
    return fmt::format("w{} ({})", worker_.index, worker_.host.ToString());
  }

  bool uploaded_agent() const override { return install_ == AgentInstall::kUploaded; }
  bool relayed_agent() const override { return install_ == AgentInstall::kFromPeer; }
  bool uses_dial_stdio() const override { return dial_stdio_; }
  bool held() const override { return held_; }

  std::shared_ptr<AgentLogStream> StartLogStream(const std::string& job_id, uint32_t attempt,
                                                 uint64_t from_seq, bool follow,
                                                 AgentLogReader::OnBatch on_batch,
                                                 AgentLogReader::OnStreamDone on_done) override {
    SshLogStreamRequest request;
    request.agent_path = RemoteAgentPath(*ctx_.agent);
    request.job_id = job_id;
    request.attempt = attempt;
    request.from_seq = from_seq;
    request.follow = follow;
    request.description = description();
    if (held_) {  // the holder runs it on its kept session, as it carries the tunnel
      return StartHeldLogStream(ctx_.loop->executor(), ctx_.holder,
                                HolderRequestFor(worker_.host, ssh_, ""), std::move(request),
                                std::move(on_batch), std::move(on_done));
    }
    // session_ is read on the loop, where Connect sets it.
    return StartSshLogStream(
        ctx_.loop->executor(), [this] { return session_; }, std::move(request), std::move(on_batch),
        std::move(on_done));
  }

 private:
  asio::awaitable<std::shared_ptr<grpc::Channel>> ConnectOnLoop() {
    tunnel_.reset();
    session_.reset();
    held_ = false;
    if (!ctx_.holder.empty()) {
      if (auto channel = co_await ConnectThroughHolder()) co_return channel;
    }
    {
      auto slot = co_await ctx_.window->Acquire();
      SshOptions options = ssh_;
      options.retry_refused = !connected_once_;  // a reconnection's caller retries, and asks why
      session_ = co_await SshSession::Connect(worker_.host, options, ctx_.jumps);
      connected_once_ = true;
    }
    {
      std::lock_guard lock(mutex_);
      address_ = session_->address();
    }
    session_->StartKeepalive();
    // Peers reach this worker at its internal address when discovery gave one.
    const std::string lend_address =
        worker_.peer_address.empty() ? session_->address() : worker_.peer_address;
    AgentAnnouncement announcement =
        co_await EnsureAgent(session_, *ctx_.agent, ctx_.relay, lend_address, &install_);
    std::unique_ptr<SshChannel> channel;
    bool forwarding_refused = false;
    try {
      channel = co_await SshChannel::OpenUnixSocket(*session_, announcement.socket_path);
    } catch (const Error&) {
      // The server answered the channel open with a refusal only if the connection is still
      // up; a broken connection is that, not a server policy, and goes up as it is.
      if (!ssh_is_connected(session_->raw())) throw;
      forwarding_refused = true;
    }
    dial_stdio_ = forwarding_refused;
    if (forwarding_refused) {
      // The server refuses stream-local forwarding: relay through the agent's own stdio.
      channel = co_await SshChannel::Exec(*session_, DialStdioCommand(*ctx_.agent));
    }
    tunnel_ = std::make_unique<AgentTunnel>(session_, std::move(channel));
    co_return tunnel_->MakeGrpcChannel();
  }

  // Through the connection holder: the agent's announcement by a held exec, then a held tunnel
  // to its socket. Null when the holder cannot serve this worker or its agent is not installed
  // (nothing was changed there): the caller connects on its own, and installs it.
  asio::awaitable<std::shared_ptr<grpc::Channel>> ConnectThroughHolder() {
    auto slot = co_await ctx_.window->Acquire();  // the holder's handshake, when it makes one
    HolderRequest request = HolderRequestFor(worker_.host, ssh_, StartAgentCommand(*ctx_.agent));
    std::optional<HeldExec> start = co_await HeldExec::Start(ctx_.holder, request);
    if (!start) co_return nullptr;
    RemoteResult result;
    result.status = co_await start->Drain([&](Stream stream, std::string_view data) {
      (stream == Stream::kStdout ? result.out : result.err).append(data);
    });
    auto announcement = ParseAnnouncement(result.out, nullptr);
    if (!announcement) co_return nullptr;  // not installed (or not starting): the long way
    CheckAgentProtocol(*announcement);
    request.kind = HolderRequest::Kind::kTunnel;
    request.socket_path = announcement->socket_path;
    request.command = DialStdioCommand(*ctx_.agent);
    std::optional<HeldTunnel> tunnel = co_await OpenHeldTunnel(ctx_.holder, request);
    if (!tunnel) co_return nullptr;
    {
      std::lock_guard lock(mutex_);
      address_ = tunnel->address;
    }
    install_ = AgentInstall::kAlreadyThere;
    dial_stdio_ = tunnel->dial_stdio;
    held_ = true;
    co_return grpc::CreateCustomInsecureChannelFromFd("podrun-agent", tunnel->fd,
                                                      AgentChannelArguments());
  }

  PodWorker worker_;
  SshOptions ssh_;
  bool connected_once_ = false;  // loop thread: a session was made once (later ones reconnect)
  AgentLinkContext ctx_;
  std::mutex connect_mutex_;  // held through Connect
  mutable std::mutex mutex_;  // guards address_ (written on the loop, read by any thread)
  std::string address_;
  AgentInstall install_ = AgentInstall::kAlreadyThere;
  bool dial_stdio_ = false;
  std::atomic<bool> held_{false};        // written on the loop, read by StartLogStream's caller
  std::shared_ptr<SshSession> session_;  // loop thread only
  std::unique_ptr<AgentTunnel> tunnel_;  // loop thread only
};

class LocalAgentLink : public AgentLink {
 public:
  LocalAgentLink(int index, const AgentLinkContext& ctx)
      : index_(index), home_(LocalWorkerHome(ctx.local_root, index)), agent_(ctx.agent) {}

  std::shared_ptr<grpc::Channel> Connect() override {
    try {
      std::string socket = StartAgent();
      return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(),
                                       AgentChannelArguments());
    } catch (Error& e) {
      e.AddContext(description());
      throw;
    }
  }

  std::string peer_address() const override { return "127.0.0.1"; }
  std::string description() const override { return fmt::format("w{} (local)", index_); }

 private:
  // Runs `podrun-agent serve` with HOME set to this worker's home; returns the socket path.
  std::string StartAgent() {
    std::error_code ec;
    std::filesystem::create_directories(home_, ec);
    if (ec) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("cannot create {}: {}", home_.string(), ec.message()));
    }
    // A minimal environment, not the launcher's (local_process.h): jobs get theirs by Prepare.
    std::vector<std::string> env = LocalWorkerEnvironment(LauncherEnvironment());
    env.push_back("HOME=" + home_.string());
    const std::string agent_path = agent_->path();
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      throw Error(ExitCode::kUnreachable, fmt::format("pipe: {}", std::strerror(errno)));
    }
    pid_t pid = -1;
    try {
      // --home spelled out (HOME would give the same) so that the agent is identifiable by it.
      // The umask podrun started with: the agent restricts its own, jobs get this one.
      pid = SpawnProcess({.argv = {agent_path, "serve", "--home", (home_ / ".podrun").string()},
                          .env = std::move(env),
                          .fds = {{STDIN_FILENO, kSpawnDevNull}, {STDOUT_FILENO, out[1]}},
                          .cwd = home_.string(),
                          .umask = InheritedUmask()});
    } catch (const SpawnError& e) {
      ::close(out[0]);
      ::close(out[1]);
      throw Error(ExitCode::kUnreachable, fmt::format("start agent: {}", e.what()));
    }
    ::close(out[1]);
    std::string output;
    char buffer[4096];
    for (;;) {
      ssize_t n = ::read(out[0], buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      output.append(buffer, static_cast<size_t>(n));
    }
    ::close(out[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    std::string other;
    auto announcement = ParseAnnouncement(output, &other);
    if (!announcement) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("start agent {}: no announcement (exit status {}){}", agent_path,
                              WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                              other.empty() ? "" : ": " + other));
    }
    return announcement->socket_path;
  }

  int index_;
  std::filesystem::path home_;
  const AgentBinary* agent_;
};

}  // namespace

std::filesystem::path LocalWorkerHome(const std::filesystem::path& local_root, int index) {
  return local_root / ("w" + std::to_string(index));
}

std::unique_ptr<AgentLink> MakeSshAgentLink(const PodWorker& worker, const SshOptions& ssh,
                                            const AgentLinkContext& ctx) {
  return std::make_unique<SshAgentLink>(worker, ssh, ctx);
}

std::unique_ptr<AgentLink> MakeLocalAgentLink(int index, const AgentLinkContext& ctx) {
  return std::make_unique<LocalAgentLink>(index, ctx);
}

}  // namespace podrun
