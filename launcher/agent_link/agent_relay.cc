// See agent_relay.h.
#include "launcher/agent_link/agent_relay.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "launcher/base/error.h"
#include "launcher/ssh/ssh_channel.h"
#include "proto/shell_quote.h"

namespace podrun {
namespace {

constexpr int kFetchesPerLender = 4;  // at once, per lending worker
constexpr auto kPoll = std::chrono::milliseconds(20);
// A seed that takes longer than this to lend (a slow uplink) is not waited for any longer.
constexpr auto kMaxWait = std::chrono::seconds(120);
// How long End waits for the lenders to exit once their stdin is closed.
constexpr auto kEndWait = std::chrono::seconds(5);

std::string RandomHex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
    throw Error(ExitCode::kUnreachable, "no random bytes for the agent relay token (OpenSSL)");
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

}  // namespace

AgentRelay::AgentRelay(boost::asio::any_io_executor executor)
    : executor_(std::move(executor)), token_(RandomHex(32)) {}

AgentRelay::~AgentRelay() = default;

boost::asio::awaitable<std::optional<AgentRelay::Source>> AgentRelay::Acquire(bool* seed) {
  *seed = false;
  const auto began = std::chrono::steady_clock::now();
  ++waiting_;
  boost::asio::steady_timer timer(executor_);
  for (;;) {
    Lender* best = nullptr;
    for (Lender& l : lenders_) {
      if (l.active < kFetchesPerLender && (!best || l.active < best->active)) best = &l;
    }
    if (best) {
      ++best->active;
      --waiting_;
      co_return best->source;
    }
    if (disabled_ || (!seeding_ && lenders_.empty()) ||
        std::chrono::steady_clock::now() - began > kMaxWait) {
      if (!disabled_ && !seeding_ && lenders_.empty()) seeding_ = *seed = true;  // this one seeds
      --waiting_;
      co_return std::nullopt;
    }
    timer.expires_after(kPoll);
    co_await timer.async_wait(boost::asio::use_awaitable);
  }
}

void AgentRelay::Release(const Source& source, bool ok) {
  if (!ok) ++failed_fetches_;
  for (auto it = lenders_.begin(); it != lenders_.end(); ++it) {
    if (it->source.host == source.host && it->source.port == source.port) {
      --it->active;
      if (!ok) lenders_.erase(it);  // do not send others to a lender that failed
      return;
    }
  }
}

void AgentRelay::Offer(const Source& source) { lenders_.push_back({source, 0}); }

void AgentRelay::Hold(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel) {
  if (ended_) {
    channel.reset();  // closed before its session may go
    return;
  }
  held_.push_back({std::move(session), std::move(channel)});
}

boost::asio::awaitable<void> AgentRelay::End() {
  ended_ = disabled_ = true;
  seeding_ = false;
  lenders_.clear();
  std::vector<Held> held = std::move(held_);
  held_.clear();
  // EOF on each lender's stdin ends it (binary_relay.h); its EOF back says it is gone.
  for (Held& h : held) {
    try {
      co_await h.channel->SendEof();
    } catch (const std::exception&) {
      // A broken connection took its lender with it.
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + kEndWait;
  for (Held& h : held) {
    try {
      co_await h.channel->ReadUntil([](Stream, std::string_view) {}, [] { return false; },
                                    deadline);
    } catch (const std::exception&) {
    }
  }
  // `held` goes here: each channel is closed, then its session let go of.
}

void AgentRelay::SeedCannotLend() {
  seeding_ = false;
  if (lenders_.empty()) disabled_ = true;
}

bool AgentRelay::WantsMoreSources() const { return !disabled_ && waiting_ > 0; }

std::string AgentFetchCommand(const AgentRelay::Source& source, const std::string& name,
                              const std::string& sha256, std::chrono::seconds timeout) {
  // The host is an address or a name (bash resolves it); refuse anything a shell would read.
  for (char c : source.host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == ':' || c == '-')) {
      throw Error(ExitCode::kUnreachable, "agent relay: bad peer address " + source.host);
    }
  }
  const std::string script = fmt::format(
      "set -e; umask 077; d=\"$HOME/.podrun/bin\"; mkdir -p \"$d\"; chmod 700 \"$HOME/.podrun\"; "
      "t=\"$d/.{0}.$$\"; trap 'rm -f \"$t\"' EXIT; "
      "timeout {1} bash -c 'exec 3<>/dev/tcp/{2}/{3}; IFS= read -r k; printf \"%s\\n\" \"$k\" >&3; "
      "cat <&3' > \"$t\"; "
      "echo \"{4}  $t\" | sha256sum -c --quiet; chmod 700 \"$t\"; mv -f \"$t\" \"$d/{0}\"",
      name, timeout.count(), source.host, source.port, sha256);
  return "bash -c " + ShellQuote(script);
}

}  // namespace podrun
