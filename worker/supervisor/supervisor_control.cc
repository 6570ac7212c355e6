// The supervisor's control socket: one request per connection, from its own user only
// (the grammar: supervisor_control.h).
#include "worker/supervisor/supervisor_control.h"

#include "worker/supervisor/supervisor_process.h"

namespace podrun::agent::supervisor_internal {

void Supervisor::ServeRequest() {
  UniqueFd conn(::accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn) return;
  ucred peer{};
  socklen_t len = sizeof peer;
  if (::getsockopt(conn.get(), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
      peer.uid != ::getuid()) {
    return;
  }
  timeval tv{kRequestTimeout.count() / 1000, 0};
  ::setsockopt(conn.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  std::string line;
  char c;
  while (line.size() < 256 && ::read(conn.get(), &c, 1) == 1 && c != '\n') line += c;
  std::string reply;
  if (auto from = RequestNumber(line, kLogRequest)) {
    for (const LogRecord& r : writer_->Held(*from)) {
      reply += EncodeLogRecord(r);
      fetched_through_ = std::max(fetched_through_, r.seq);
    }
    reader_seen_ = Clock::now();
  } else if (auto grace = RequestNumber(line, kStopRequest)) {
    stop_requested_ = true;
    stop_grace_ = seconds(*grace);
    reply = kOkReply;
  } else if (line == kDiscardRequest) {
    discard_ = true;
    reply = kOkReply;
  } else {
    reply = ErrorReply("unknown request");
  }
  size_t done = 0;
  while (done < reply.size()) {
    const ssize_t n = ::send(conn.get(), reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
}

}  // namespace podrun::agent::supervisor_internal
