// Jump host sessions and the channels through them (see jump_hosts.h).
#include "launcher/ssh/jump_hosts.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstring>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/ssh/channel_bridge.h"
#include "launcher/ssh/ssh_channel.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;

// What a worker's connection holds of at once in each direction through the jump host.
constexpr size_t kJumpChunkBytes = size_t{64} * 1024;

bool Usable(const SshSession& session) {
  return !session.lost() && ssh_is_connected(session.raw()) != 0;
}

// The options a hop is connected with: the pod's, minus what names the workers; through the
// hops before it (explicitly), or, for the first hop, as ssh_config says.
SshOptions HopOptions(const SshOptions& pod, const JumpChain& chain) {
  SshOptions hop = pod;
  hop.default_user.reset();
  hop.default_port.reset();
  if (chain.size() > 1) {
    hop.jump = JumpChain(chain.begin(), chain.end() - 1);
  } else {
    hop.jump.reset();
  }
  hop.jump_depth = pod.jump_depth + 1;
  return hop;
}

// A worker's connection through a jump host: the bridge, and the jump host's session kept
// alive as long as it.
class JumpTransport : public SshTransport {
 public:
  JumpTransport(std::shared_ptr<SshSession> jump, std::unique_ptr<ChannelBridge> bridge)
      : jump_(std::move(jump)), bridge_(std::move(bridge)) {}

  asio::awaitable<std::optional<std::string>> Failure() override {
    if (!Usable(*jump_)) {
      co_return fmt::format("jump host {}: connection lost", jump_->description());
    }
    co_return std::nullopt;
  }

 private:
  std::shared_ptr<SshSession> jump_;
  std::unique_ptr<ChannelBridge> bridge_;  // destroyed first: it uses jump_'s session
};

}  // namespace

struct JumpHosts::Entry {
  std::shared_ptr<SshSession> session;
  bool connecting = false;
  std::string error;  // of the last attempt, for those who waited for it
  std::vector<std::shared_ptr<asio::steady_timer>> waiters;
};

JumpHosts::JumpHosts(asio::any_io_executor executor) : executor_(std::move(executor)) {}

JumpHosts::~JumpHosts() = default;

void JumpHosts::Close() {
  for (auto& [key, entry] : entries_) entry->session.reset();
}

asio::awaitable<std::shared_ptr<SshSession>> JumpHosts::Get(const JumpChain& chain,
                                                            const SshOptions& options) {
  const HostSpec& hop = chain.back();
  if (options.jump_depth >= kMaxJumpHops) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("jump host {}: more than {} jump hosts in a row (a ProxyJump loop "
                            "in ssh_config?)",
                            hop.ToString(), kMaxJumpHops));
  }
  // Per depth as well: a loop in ssh_config then ends at kMaxJumpHops instead of waiting for
  // its own attempt.
  std::string key = fmt::format("{}/{}", options.jump_depth, JumpChainToString(chain));
  std::shared_ptr<Entry>& slot = entries_[key];
  if (!slot) slot = std::make_shared<Entry>();
  std::shared_ptr<Entry> entry = slot;
  if (entry->session && Usable(*entry->session)) co_return entry->session;
  if (entry->connecting) {
    auto timer = std::make_shared<asio::steady_timer>(executor_, Clock::time_point::max());
    entry->waiters.push_back(timer);
    boost::system::error_code ignored;
    co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    if (entry->session && Usable(*entry->session)) co_return entry->session;
    throw Error(ExitCode::kUnreachable, entry->error);
  }
  entry->connecting = true;
  std::shared_ptr<SshSession> session;
  try {
    session = co_await SshSession::Connect(hop, HopOptions(options, chain), this);
    session->StartKeepalive();
    ++connections_;
    entry->error.clear();
  } catch (const std::exception& e) {
    entry->error = fmt::format("jump host {}: {}", hop.ToString(), e.what());
  }
  entry->connecting = false;
  entry->session = session;
  std::vector<std::shared_ptr<asio::steady_timer>> waiters;
  waiters.swap(entry->waiters);
  for (auto& timer : waiters) timer->cancel();
  if (!session) throw Error(ExitCode::kUnreachable, entry->error);
  co_return session;
}

asio::awaitable<StartedTransport> ConnectThroughJump(JumpHosts* jumps, const JumpChain& chain,
                                                     const std::string& host, unsigned int port,
                                                     const SshOptions& options,
                                                     Clock::time_point deadline) {
  std::shared_ptr<SshSession> jump;
  if (jumps != nullptr) {
    jump = co_await jumps->Get(chain, options);
  } else {
    JumpHosts own(co_await asio::this_coro::executor);
    jump = co_await own.Get(chain, options);
  }
  std::unique_ptr<SshChannel> channel = co_await SshChannel::OpenTcp(*jump, host, port, deadline);
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0) {
    throw Error(ExitCode::kUnreachable, fmt::format("socketpair: {}", std::strerror(errno)));
  }
  auto bridge = std::make_unique<ChannelBridge>(jump, std::move(channel), fds[0], kJumpChunkBytes);
  co_return StartedTransport{std::make_unique<JumpTransport>(jump, std::move(bridge)), fds[1]};
}

}  // namespace podrun
