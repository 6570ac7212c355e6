// The holder's kept sessions: connect once, share, close when idle.
#include "launcher/persist/kept_sessions.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <set>

namespace podrun {

struct KeptSessions::Entry {
  explicit Entry(const asio::any_io_executor& executor)
      : ready(std::make_shared<asio::steady_timer>(executor)) {}
  std::string key;
  std::string settings;  // SettingsKey: the group whose jump host connections it shares
  std::shared_ptr<SshSession> session;
  bool connecting = false;
  std::exception_ptr failure;                 // the connection attempt's, for its waiters
  std::shared_ptr<asio::steady_timer> ready;  // cancelled when the attempt ends
  int users = 0;
  std::chrono::steady_clock::time_point last_used;
  std::chrono::seconds persist{600};
};

namespace {

bool Usable(const SshSession& s) {
  return !s.lost() && ssh_is_connected(s.raw()) != 0 &&
         (ssh_get_status(s.raw()) & (SSH_CLOSED | SSH_CLOSED_ERROR)) == 0;
}

}  // namespace

KeptSessions::KeptSessions(asio::any_io_executor executor) : executor_(std::move(executor)) {}

KeptSessions::~KeptSessions() {
  entries_.clear();
  for (auto& [key, jumps] : jumps_) jumps->Close();
}

KeptSessions::Lease& KeptSessions::Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    entry_ = std::move(other.entry_);
    reused_ = other.reused_;
  }
  return *this;
}

SshSession& KeptSessions::Lease::session() const { return *entry_->session; }

std::shared_ptr<SshSession> KeptSessions::Lease::shared_session() const { return entry_->session; }

void KeptSessions::Lease::Discard() {
  if (owner_ != nullptr && entry_) owner_->Forget(entry_);
}

void KeptSessions::Lease::Release() {
  if (!entry_) return;
  --entry_->users;
  entry_->last_used = std::chrono::steady_clock::now();
  entry_.reset();
  owner_ = nullptr;
}

void KeptSessions::Forget(const std::shared_ptr<Entry>& entry) {
  auto it = entries_.find(entry->key);
  if (it != entries_.end() && it->second == entry) entries_.erase(it);
}

asio::awaitable<KeptSessions::Lease> KeptSessions::Acquire(const HolderRequest& request) {
  const std::string key = SessionKey(request);
  for (;;) {
    auto it = entries_.find(key);
    if (it == entries_.end()) break;
    std::shared_ptr<Entry> entry = it->second;
    if (entry->connecting) {
      boost::system::error_code ignored;  // cancelled when the attempt ends
      co_await entry->ready->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      if (entry->failure) std::rethrow_exception(entry->failure);
      continue;
    }
    if (Usable(*entry->session)) {
      ++entry->users;
      entry->persist = request.persist;
      co_return Lease(this, entry, true);
    }
    entries_.erase(it);  // lost: its channels (if any) still hold it
  }
  auto entry = std::make_shared<Entry>(executor_);
  entry->key = key;
  entry->settings = SettingsKey(request.ssh);
  entry->persist = request.persist;
  entry->connecting = true;
  entry->ready->expires_at(asio::steady_timer::time_point::max());
  entries_[key] = entry;
  std::unique_ptr<JumpHosts>& jumps = jumps_[entry->settings];
  if (!jumps) jumps = std::make_unique<JumpHosts>(executor_);
  try {
    entry->session = co_await SshSession::Connect(request.target, request.ssh, jumps.get());
    entry->session->StartKeepalive();
  } catch (...) {
    entry->failure = std::current_exception();
  }
  entry->connecting = false;
  entry->ready->cancel();
  if (entry->failure) {
    Forget(entry);
    std::rethrow_exception(entry->failure);
  }
  ++entry->users;
  co_return Lease(this, entry, false);
}

size_t KeptSessions::Sweep(std::chrono::steady_clock::time_point now) {
  std::erase_if(entries_, [&](const auto& item) {
    const Entry& e = *item.second;
    if (e.connecting || e.users > 0) return false;
    return now - e.last_used >= e.persist || !Usable(*e.session);
  });
  std::set<std::string> needed;
  for (const auto& [key, entry] : entries_) needed.insert(entry->settings);
  for (auto it = jumps_.begin(); it != jumps_.end();) {
    if (needed.count(it->first)) {
      ++it;
    } else {
      it->second->Close();
      it = jumps_.erase(it);
    }
  }
  return entries_.size();
}

}  // namespace podrun
