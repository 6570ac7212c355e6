// The SSH sessions the connection holder keeps (docs/decisions.md, "Warm connections"), by what
// they may be reused for (SessionKey: the target and every setting that decides where a connection
// goes and what it trusts). A session is made exactly as a command makes its own
// (SshSession::Connect: ssh_config, the host-key check against the request's known_hosts, the
// user's keys), kept while in use, and closed once unused for the request's persist time or lost.
// Event-loop thread only; create, use and destroy on the loop.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "launcher/persist/holder_protocol.h"
#include "launcher/ssh/jump_hosts.h"
#include "launcher/ssh/ssh_session.h"

namespace podrun {

class KeptSessions {
  struct Entry;

 public:
  explicit KeptSessions(asio::any_io_executor executor);
  ~KeptSessions();
  KeptSessions(const KeptSessions&) = delete;
  KeptSessions& operator=(const KeptSessions&) = delete;

  // A session in use. Destroying it releases the session: its idle time starts.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& other) noexcept { *this = std::move(other); }
    Lease& operator=(Lease&& other) noexcept;
    ~Lease() { Release(); }

    SshSession& session() const;
    // False for a lease that holds nothing (default-made, released or moved from).
    bool has_session() const { return entry_ != nullptr; }
    // The same session, for what keeps it alive on its own (a ChannelBridge).
    std::shared_ptr<SshSession> shared_session() const;
    // True when the session was kept from an earlier request (no handshake was made for it).
    bool reused() const { return reused_; }
    // Forgets the session (it proved stale: a channel could not be opened on it, or it broke):
    // the next Acquire for its key connects anew. It lives on while this lease does.
    void Discard();
    void Release();

   private:
    friend class KeptSessions;
    Lease(KeptSessions* owner, std::shared_ptr<Entry> entry, bool reused)
        : owner_(owner), entry_(std::move(entry)), reused_(reused) {}
    KeptSessions* owner_ = nullptr;
    std::shared_ptr<Entry> entry_;
    bool reused_ = false;
  };

  // The kept session for `request`'s key when it is still connected, else a new one, connected
  // with the request's target and settings. Callers that come while it connects wait for that
  // one attempt and share its outcome. Throws what SshSession::Connect throws (Error, kUnreachable,
  // naming the host and the reason: a refused host key as a command's own connection says it).
  asio::awaitable<Lease> Acquire(const HolderRequest& request);

  // Closes the sessions not in use whose persist time has passed since their last use, and those
  // whose connection is gone; lets go of jump host connections no kept session needs. Returns
  // the number of sessions still kept (or being connected).
  size_t Sweep(std::chrono::steady_clock::time_point now);

  size_t size() const { return entries_.size(); }

 private:
  void Forget(const std::shared_ptr<Entry>& entry);

  asio::any_io_executor executor_;
  std::map<std::string, std::shared_ptr<Entry>> entries_;    // by SessionKey
  std::map<std::string, std::unique_ptr<JumpHosts>> jumps_;  // by SettingsKey
};

}  // namespace podrun
