// AgentRelay: the agent binary travels once over the user's uplink (docs/design.md decision 11).
// During one command's bootstrap, the first worker that lacks the agent gets it through its
// SSH connection (the seed); once its agent runs it lends the binary (`podrun-agent
// lend`, worker/sync/binary_relay.h) and the other workers that lack it fetch it from a
// peer over the pod's network, checked against the hash the launcher gives them over SSH; each
// worker that got it lends it in turn. A worker whose fetch fails gets it through its own
// connection. A lender serves while its SSH channel stays open: the relay holds those channels
// and closes them when the command ends the relay (every worker has its agent), so that no
// lender listens any longer. Loop thread only (every link's bootstrap runs there).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace podrun {

class SshChannel;
class SshSession;

class AgentRelay {
 public:
  // A worker lending the binary.
  struct Source {
    std::string host;  // as peers reach it
    uint16_t port = 0;
  };

  explicit AgentRelay(boost::asio::any_io_executor executor);
  // End() first: the channels it holds are closed there.
  ~AgentRelay();
  AgentRelay(const AgentRelay&) = delete;
  AgentRelay& operator=(const AgentRelay&) = delete;

  // For a worker that lacks the agent: a peer to fetch from (waiting while the seed uploads), or
  // nullopt when this worker should upload it itself (*seed: it is the first; it must then lend
  // it, or call SeedCannotLend, or the others wait for nothing).
  boost::asio::awaitable<std::optional<Source>> Acquire(bool* seed);
  // After a fetch from `source`, whether it worked.
  void Release(const Source& source, bool ok);
  // A worker that now has the agent lends it at `source`.
  void Offer(const Source& source);
  // Keeps the channel of a lender that was offered open until End (its lender serves while it
  // is); `session`, the channel's, is kept until then too. After End: closes it at once.
  void Hold(std::shared_ptr<SshSession> session, std::unique_ptr<SshChannel> channel);
  // Nobody needs a lender any more (the command's workers have their agents, or gave up): closes
  // the lenders' channels and waits until they are gone (a few seconds at most). From then on
  // nobody lends and Acquire has no source. Idempotent; never throws.
  boost::asio::awaitable<void> End();
  // The seed could not get the agent or cannot lend it: the others upload for themselves.
  void SeedCannotLend();
  // Whether a worker that just got the agent should lend it (someone waits, or may).
  bool WantsMoreSources() const;

  // Fetches from a peer that failed (those workers then uploaded for themselves).
  int failed_fetches() const { return failed_fetches_; }

  // The token a fetch presents (hex of 32 random bytes), given to the lender on stdin.
  const std::string& token() const { return token_; }

 private:
  struct Lender {
    Source source;
    int active = 0;
  };
  struct Held {
    std::shared_ptr<SshSession> session;
    std::unique_ptr<SshChannel> channel;  // after the session: closed before it goes
  };
  boost::asio::any_io_executor executor_;
  std::string token_;
  std::vector<Lender> lenders_;
  std::vector<Held> held_;
  bool seeding_ = false;
  bool disabled_ = false;
  bool ended_ = false;
  int waiting_ = 0;
  int failed_fetches_ = 0;
};

// The shell command that fetches the binary from `source` into ~/.podrun/bin/<name> on a worker
// (bash's /dev/tcp; checked with sha256sum against `sha256`; bounded by `timeout`). The relay's
// token is not in it: the command reads it as the first line of its stdin, so no `ps` shows it.
std::string AgentFetchCommand(const AgentRelay::Source& source, const std::string& name,
                              const std::string& sha256, std::chrono::seconds timeout);

}  // namespace podrun
