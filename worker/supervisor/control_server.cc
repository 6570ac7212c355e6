// The supervisor's control socket (see control_server.h).
#include "worker/supervisor/control_server.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

#include "proto/log_record.h"
#include "worker/base/agent_error.h"
#include "worker/base/unix_socket.h"
#include "worker/supervisor/supervisor_control.h"

namespace podrun::agent {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = ControlServer::Clock;

// A control connection gets this long to send its request line, and then this long for each
// part of its reply it takes; it is closed after that. Served without blocking: a client that
// stalls never holds up the job's pipes (or the other clients).
constexpr auto kRequestTimeout = milliseconds(2000);
constexpr size_t kMaxRequestBytes = 256;
// The most held output one LOG reply carries (the reader asks again for more), so that what a
// reply costs in memory, on both sides, stays small beside LogWriter::kMaxHeldBytes.
constexpr size_t kMaxLogReplyBytes = 2u << 20;
// After the end, how long records held only in memory wait for a live reader to fetch them.
constexpr auto kLingerForReaders = seconds(30);

int MsUntil(Clock::time_point t) {
  auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

}  // namespace

ControlServer::ControlServer(const std::filesystem::path& socket, LogWriter& writer)
    : writer_(writer), listen_(ListenUnix(socket)) {}

nfds_t ControlServer::AddFds(pollfd* fds, int* tags, nfds_t n, int first_tag) const {
  if (clients_.size() < kMaxClients) fds[n] = {listen_.get(), POLLIN, 0}, tags[n++] = first_tag;
  for (size_t i = 0; i < clients_.size(); ++i) {
    if (!clients_[i].fd) continue;
    const short events = clients_[i].answered ? POLLOUT : POLLIN;
    fds[n] = {clients_[i].fd.get(), events, 0}, tags[n++] = first_tag + 1 + static_cast<int>(i);
  }
  return n;
}

void ControlServer::OnEvents(int k) {
  if (k == 0) {
    AcceptClient();
  } else {
    OnClient(static_cast<size_t>(k - 1));
  }
}

void ControlServer::EndClients() {
  const auto now = Clock::now();
  std::erase_if(clients_, [&](const Client& c) { return !c.fd || now >= c.deadline; });
}

Clock::time_point ControlServer::Deadline() const {
  auto earliest = Clock::time_point::max();
  for (const Client& c : clients_) earliest = std::min(earliest, c.deadline);
  return earliest;
}

void ControlServer::Linger() {
  const auto deadline = Clock::now() + kLingerForReaders;
  // Also until the clients being served have their replies (or are overdue).
  EndClients();
  while ((!writer_.Held(had_through_ + 1, 1).empty() || !clients_.empty()) &&
         Clock::now() < deadline) {
    pollfd fds[kMaxFds];
    int tags[kMaxFds];
    const nfds_t n = AddFds(fds, tags, 0, 0);
    const int rc = ::poll(fds, n, MsUntil(std::min(deadline, Deadline())));
    if (rc < 0 && errno != EINTR) throw std::runtime_error(ErrnoMessage("poll"));
    for (nfds_t i = 0; rc > 0 && i < n; ++i) {
      if (fds[i].revents) OnEvents(tags[i]);
    }
    EndClients();
  }
}

void ControlServer::AcceptClient() {
  UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!conn) return;
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      peer.uid != ::getuid()) {
    return;
  }
  Client client;
  client.fd = std::move(conn);
  client.deadline = Clock::now() + kRequestTimeout;
  clients_.push_back(std::move(client));
}

// Takes what the connection has of the request line, answers it once complete (or at
// end-of-file), then sends what the connection takes of the reply; never waits.
void ControlServer::OnClient(size_t index) {
  Client& c = clients_[index];
  while (!c.answered) {
    char buf[kMaxRequestBytes];
    const ssize_t got = ::recv(c.fd.get(), buf, sizeof buf, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (got < 0) {  // the client went away: nothing is done for it
      c.fd.reset();
      return;
    }
    c.request.append(buf, static_cast<size_t>(got));
    const size_t newline = c.request.find('\n');
    if (got > 0 && newline == std::string::npos && c.request.size() < kMaxRequestBytes) continue;
    c.request.resize(std::min({newline, c.request.size(), kMaxRequestBytes}));
    c.reply = Answer(c.request);
    c.answered = true;
  }
  while (c.sent < c.reply.size()) {
    const ssize_t n =
        ::send(c.fd.get(), c.reply.data() + c.sent, c.reply.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) break;
    c.sent += static_cast<size_t>(n);
    c.deadline = Clock::now() + kRequestTimeout;  // a reader that keeps taking it keeps it
  }
  c.fd.reset();
}

std::string ControlServer::Answer(const std::string& line) {
  if (auto from = RequestNumber(line, kLogRequest)) {
    // Asking from `from` on, the reader says it has every record before it.
    if (*from > 1) {
      writer_.Delivered(*from - 1);
      had_through_ = std::max(had_through_, *from - 1);
    }
    std::string reply;
    for (const LogRecord& r : writer_.Held(*from, kMaxLogReplyBytes)) reply += EncodeLogRecord(r);
    last_log_request_ = Clock::now();
    return reply;
  }
  if (auto grace = RequestNumber(line, kStopRequest)) {
    stop_requested_ = true;
    stop_grace_ = seconds(*grace);
    return std::string(kOkReply);
  }
  if (line == kDiscardRequest) {
    discarded_ = true;
    return std::string(kOkReply);
  }
  if (line.starts_with(kConfirmWithinRequest)) {
    char* end = nullptr;
    const char* numbers = line.c_str() + kConfirmWithinRequest.size();
    const unsigned long long window_ms = std::strtoull(numbers, &end, 10);
    const unsigned long long grace_s = std::strtoull(end, nullptr, 10);
    confirmation_.Require(milliseconds(window_ms), seconds(grace_s));
    return std::string(kOkReply);
  }
  if (line == kConfirmRequest) {
    if (confirmation_.Confirm()) return std::string(kOkReply);
    return ErrorReply("the start was not confirmed within " +
                      std::to_string(confirmation_.window().count()) +
                      " ms of the job's release: the job is being stopped");
  }
  return ErrorReply("unknown request");
}

}  // namespace podrun::agent
