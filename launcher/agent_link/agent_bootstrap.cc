// Agent bootstrap over SSH.
#include "launcher/agent_link/agent_bootstrap.h"

#include <fmt/format.h>

#include <sstream>

#include "launcher/base/error.h"
#include "proto/protocol_version.h"
#include "proto/shell_quote.h"

namespace podrun {
asio::awaitable<RemoteResult> RunRemote(SshSession& session, const std::string& command,
                                        std::string_view input) {
  auto channel = co_await SshChannel::Exec(session, command);
  if (!input.empty()) co_await channel->Write(input);
  co_await channel->SendEof();
  RemoteResult result;
  result.status = co_await channel->Drain([&](Stream stream, std::string_view data) {
    (stream == Stream::kStdout ? result.out : result.err).append(data);
  });
  co_return result;
}

std::string RemoteAgentPath(const AgentBinary& agent) {
  return "$HOME/.podrun/bin/" + agent.remote_name();
}

std::string StartAgentCommand(const AgentBinary& agent) {
  // `sh -c` so that the worker's login shell, whatever it is, runs POSIX syntax.
  return "sh -c " + ShellQuote(fmt::format("a=\"{}\"; if [ -x \"$a\" ]; then exec \"$a\" serve; "
                                           "else echo '{}'; fi",
                                           RemoteAgentPath(agent), kAgentMissing));
}

std::string DialStdioCommand(const AgentBinary& agent) {
  return "sh -c " + ShellQuote("exec \"" + RemoteAgentPath(agent) + "\" dial-stdio");
}

void CheckAgentProtocol(const AgentAnnouncement& announcement) {
  if (announcement.protocol_version != kProtocolVersion) {
    throw Error(
        ExitCode::kUnreachable,
        fmt::format("an agent of protocol {} (version {}) already runs there; this "
                    "podrun speaks protocol {}: stop it with `pkill podrun-agent`",
                    announcement.protocol_version, announcement.agent_version, kProtocolVersion));
  }
}

namespace {

constexpr auto kFetchTimeout = std::chrono::seconds(20);
constexpr std::chrono::seconds kLendFor{120};
constexpr std::chrono::seconds kServingWithin{30};

// Has the worker's agent binary lent to peers (lend) over a channel of its own, which `relay`
// then holds open: the lender serves until it is closed (AgentRelay::End). Throws on failure.
asio::awaitable<void> Lend(const std::shared_ptr<SshSession>& session, const AgentBinary& agent,
                           AgentRelay& relay, const std::string& address) {
  const std::string command =
      "sh -c " +
      ShellQuote(fmt::format("exec \"{}\" lend --address {} --seconds {}", RemoteAgentPath(agent),
                             ShellQuote(address), kLendFor.count()));
  auto channel = co_await SshChannel::Exec(*session, command);
  co_await channel->Write(relay.token() + "\n");
  const std::string prefix = std::string(kServingPrefix) + " ";
  std::string out, err;
  size_t at = std::string::npos;
  const bool serving = co_await channel->ReadUntil(
      [&](Stream stream, std::string_view data) {
        (stream == Stream::kStdout ? out : err).append(data);
      },
      [&] {
        at = out.find(prefix);
        return at != std::string::npos && out.find('\n', at) != std::string::npos;
      },
      std::chrono::steady_clock::now() + kServingWithin);
  if (!serving) {
    std::string how = fmt::format("no answer in {} s", kServingWithin.count());
    if (ssh_channel_is_eof(channel->raw()) || ssh_channel_is_closed(channel->raw())) {
      ExitStatus status = co_await channel->WaitExitStatus();
      how = status.ToString();
    }
    throw Error(ExitCode::kUnreachable, fmt::format("lend the agent: {}: {}", how, err));
  }
  const int port = std::atoi(out.c_str() + at + prefix.size());
  if (port <= 0 || port > 65535) throw Error(ExitCode::kUnreachable, "lend the agent: bad port");
  relay.Offer({address, static_cast<uint16_t>(port)});
  relay.Hold(session, std::move(channel));
}

}  // namespace

asio::awaitable<AgentAnnouncement> EnsureAgent(const std::shared_ptr<SshSession>& shared,
                                               const AgentBinary& agent, AgentRelay* relay,
                                               const std::string& lend_address, AgentInstall* how) {
  SshSession& session = *shared;
  *how = AgentInstall::kAlreadyThere;
  bool seed = false;
  // A seed that fails must free the others from waiting for it.
  struct SeedGuard {
    AgentRelay* relay;
    bool* seed;
    ~SeedGuard() {
      if (*seed) relay->SeedCannotLend();
    }
  } guard{relay, &seed};
  const std::string path = RemoteAgentPath(agent);
  const std::string start = StartAgentCommand(agent);
  for (int round = 0; round < 2; ++round) {
    RemoteResult r = co_await RunRemote(session, start);
    std::string other;
    auto announcement = ParseAnnouncement(r.out, &other);
    if (announcement) {
      CheckAgentProtocol(*announcement);
      if (relay && *how != AgentInstall::kAlreadyThere && (seed || relay->WantsMoreSources())) {
        try {
          co_await Lend(shared, agent, *relay, lend_address);
          seed = false;  // lent: the guard has nothing to undo
        } catch (const Error&) {
          // The others fetch from elsewhere or upload for themselves (the guard tells them).
        }
      }
      co_return *announcement;
    }
    if (r.out.find(kAgentMissing) == std::string::npos || round == 1) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("start agent: no announcement from {} ({}){}{}", path,
                              r.status.ToString(), other.empty() ? "" : "; stdout: " + other,
                              r.err.empty() ? "" : "; stderr: " + r.err));
    }
    if (relay) {
      if (auto source = co_await relay->Acquire(&seed)) {
        RemoteResult got = co_await RunRemote(
            session, AgentFetchCommand(*source, agent.remote_name(), agent.sha256(), kFetchTimeout),
            relay->token() + "\n");  // on stdin: never on a command line
        relay->Release(*source, !got.status.failed());
        if (!got.status.failed()) {
          *how = AgentInstall::kFromPeer;
          continue;
        }
      }
    }
    // Upload: gzip'd, checked against the hash, renamed into place only when complete.
    std::string install =
        "sh -c " + ShellQuote(fmt::format("set -e; umask 077; d=\"$HOME/.podrun/bin\"; "
                                          "mkdir -p \"$d\"; chmod 700 \"$HOME/.podrun\"; "
                                          "t=\"$d/.{0}.$$\"; "
                                          "trap 'rm -f \"$t\"' EXIT; gzip -dc > \"$t\"; "
                                          "echo \"{1}  $t\" | sha256sum -c --quiet; "
                                          "chmod 700 \"$t\"; mv -f \"$t\" \"$d/{0}\"",
                                          agent.remote_name(), agent.sha256()));
    RemoteResult up = co_await RunRemote(session, install, agent.gzipped());
    if (up.status.failed()) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("upload agent to {}: {}: {}", path, up.status.ToString(),
                              up.err.empty() ? up.out : up.err));
    }
    *how = AgentInstall::kUploaded;
  }
  throw Error(ExitCode::kUnreachable, "start agent: gave up");
}

}  // namespace podrun
