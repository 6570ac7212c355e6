// The supervisor's control socket: one request per connection, from its own user only
// (the grammar: supervisor_control.h). Connections are served from the supervisor's loop
// without blocking, each with a deadline (kRequestTimeout).
#include "worker/supervisor/supervisor_control.h"

#include "worker/supervisor/supervisor_process.h"

namespace podrun::agent::supervisor_internal {

nfds_t Supervisor::AddControlFds(pollfd* fds, int* kinds, nfds_t n) const {
  if (clients_.size() < kMaxClients) fds[n] = {listen_.get(), POLLIN, 0}, kinds[n++] = kListenKind;
  for (size_t i = 0; i < clients_.size(); ++i) {
    if (!clients_[i].fd) continue;
    const short events = clients_[i].answered ? POLLOUT : POLLIN;
    fds[n] = {clients_[i].fd.get(), events, 0}, kinds[n++] = kClientKind + static_cast<int>(i);
  }
  return n;
}

void Supervisor::OnControl(int kind) {
  if (kind == kListenKind) {
    AcceptClient();
  } else {
    OnClient(static_cast<size_t>(kind - kClientKind));
  }
}

void Supervisor::EndClients() {
  const auto now = Clock::now();
  std::erase_if(clients_, [&](const Client& c) { return !c.fd || now >= c.deadline; });
}

Clock::time_point Supervisor::ClientsDeadline() const {
  auto earliest = Clock::time_point::max();
  for (const Client& c : clients_) earliest = std::min(earliest, c.deadline);
  return earliest;
}

void Supervisor::AcceptClient() {
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
void Supervisor::OnClient(size_t index) {
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

std::string Supervisor::Answer(const std::string& line) {
  if (auto from = RequestNumber(line, kLogRequest)) {
    // Asking from `from` on, the reader says it has every record before it.
    if (*from > 1) writer_->Delivered(*from - 1);
    std::string reply;
    for (const LogRecord& r : writer_->Held(*from, kMaxLogReplyBytes)) {
      reply += EncodeLogRecord(r);
      fetched_through_ = std::max(fetched_through_, r.seq);
    }
    reader_seen_ = Clock::now();
    return reply;
  }
  if (auto grace = RequestNumber(line, kStopRequest)) {
    stop_requested_ = true;
    stop_grace_ = seconds(*grace);
    return std::string(kOkReply);
  }
  if (line == kDiscardRequest) {
    discard_ = true;
    return std::string(kOkReply);
  }
  return ErrorReply("unknown request");
}

}  // namespace podrun::agent::supervisor_internal
