// The agent binary relay's server (see binary_relay.h).
#include "worker/sync/binary_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "proto/protocol_version.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/base/tcp_socket.h"

namespace podrun::agent {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::chrono::seconds kSendTimeout{10};  // per send: a fetcher that stopped reading
constexpr size_t kMaxTokenLine = 128;
constexpr milliseconds kTick{100};  // the longest wait: a finished transfer's turn passes on

// Constant-time comparison: how long it takes says nothing about the token.
bool SameToken(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A connection yet to present the token: what it sent so far, and until when it may.
struct Pending {
  UniqueFd fd;
  Clock::time_point deadline;
  std::string line;
};

enum class TokenRead { kMore, kBad, kGood };

// Reads what `p` sent (its socket is non-blocking) and judges its first line.
TokenRead ReadToken(Pending& p, const std::string& token) {
  char buffer[kMaxTokenLine + 1];
  for (;;) {
    const ssize_t n = ::recv(p.fd.get(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return TokenRead::kMore;
    if (n <= 0) return TokenRead::kBad;  // closed, or broken, before the token
    p.line.append(buffer, static_cast<size_t>(n));
    const size_t eol = p.line.find('\n');
    if (eol != std::string::npos) {
      return SameToken(p.line.substr(0, eol), token) ? TokenRead::kGood : TokenRead::kBad;
    }
    if (p.line.size() > kMaxTokenLine) return TokenRead::kBad;
  }
}

// One transfer, on a thread of its own. It owns the socket the thread sends on, and joins the
// thread before letting go of it; the binary's fd is the caller's (it outlives every transfer).
class Transfer {
 public:
  Transfer(UniqueFd client, int binary, off_t size) : client_(std::move(client)) {
    thread_ = std::thread([this, binary, size] {
      // A fetcher that went away (or Abort) is a failed send, not a kill: sendfile takes no
      // MSG_NOSIGNAL, so this thread blocks the SIGPIPE it would get (dropped as it ends).
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      Send(binary, size);
      done_ = true;
    });
  }
  ~Transfer() {
    Abort();
    thread_.join();
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  bool done() const { return done_.load(); }
  // Makes a send in progress fail at once.
  void Abort() { ::shutdown(client_.get(), SHUT_RDWR); }

 private:
  void Send(int binary, off_t size) {
    const int fd = client_.get();
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    const timeval tv{kSendTimeout.count(), 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    off_t offset = 0;
    while (offset < size) {
      const ssize_t n = ::sendfile(fd, binary, &offset, static_cast<size_t>(size - offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
    }
    ::shutdown(fd, SHUT_WR);
  }

  UniqueFd client_;
  std::atomic<bool> done_{false};
  std::thread thread_;  // last: started once the rest exists
};

int Millis(Clock::duration d) {
  return static_cast<int>(std::clamp<int64_t>(
      std::chrono::duration_cast<milliseconds>(d).count() + 1, 0, kTick.count()));
}

// Reads the first line of `fd` byte by byte (nothing after it is consumed).
bool ReadLine(int fd, std::string* line) {
  char c;
  while (line->size() < 256) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    if (c == '\n') return true;
    *line += c;
  }
  return false;
}

}  // namespace

int ServeBinary(UniqueFd listener, int binary, off_t size, const std::string& token, int stop,
                const LendLimits& limits) {
  const auto end = Clock::now() + limits.lifetime;
  auto idle_since = Clock::now();
  std::list<Pending> pending;
  std::deque<UniqueFd> ready;  // presented the token; wait for a transfer's turn
  std::list<std::unique_ptr<Transfer>> running;
  int served = 0;
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = Clock::now();
    running.remove_if([](const auto& t) { return t->done(); });
    while (!ready.empty() && static_cast<int>(running.size()) < limits.max_at_once) {
      UniqueFd client = std::move(ready.front());
      ready.pop_front();
      try {
        running.push_back(std::make_unique<Transfer>(std::move(client), binary, size));
      } catch (const std::system_error&) {
        // No thread for it: that fetcher gets EOF and uploads for itself.
      }
    }
    const bool accepting = served < limits.max_clients;
    if (!accepting) {
      listener.reset();  // nobody else gets it: no reason to listen
      pending.clear();
    }
    pending.remove_if([&](const Pending& p) { return now >= p.deadline; });
    if (!pending.empty() || !ready.empty() || !running.empty()) idle_since = now;
    if (now >= end || (!accepting && ready.empty() && running.empty()) ||
        now - idle_since >= limits.idle) {
      break;
    }
    // Waits for stdin's EOF, a connection, a token, or the next deadline or turn.
    int wait = Millis(std::min(end, idle_since + limits.idle) - now);
    fds.assign(1, pollfd{stop, POLLIN, 0});
    const bool listen = accepting && static_cast<int>(pending.size()) < limits.max_unauthenticated;
    if (listen) fds.push_back({listener.get(), POLLIN, 0});
    for (const Pending& p : pending) {
      fds.push_back({p.fd.get(), POLLIN, 0});
      wait = std::min(wait, Millis(p.deadline - now));
    }
    const int n = ::poll(fds.data(), fds.size(), wait);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents != 0) {
      char buffer[256];
      const ssize_t got = ::read(stop, buffer, sizeof buffer);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) break;  // stdin closed
    }
    size_t at = listen ? 2 : 1;
    for (auto it = pending.begin(); it != pending.end(); ++at) {
      const TokenRead read = fds[at].revents != 0 ? ReadToken(*it, token) : TokenRead::kMore;
      if (read == TokenRead::kMore) {
        ++it;
        continue;
      }
      if (read == TokenRead::kGood && served < limits.max_clients) {
        ++served;
        ready.push_back(std::move(it->fd));
      }
      it = pending.erase(it);
    }
    while (listen && (fds[1].revents & POLLIN) &&
           static_cast<int>(pending.size()) < limits.max_unauthenticated) {
      UniqueFd client(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
      if (!client) break;
      pending.push_back({std::move(client), Clock::now() + limits.token_deadline, {}});
    }
  }
  // The launcher is done with it, or its time is up: what still runs is nobody's business.
  for (auto& t : running) t->Abort();
  running.clear();  // joins
  return served;
}

int Lend(const LendArgs& args) {
  ::signal(SIGPIPE, SIG_IGN);  // a fetcher that went away is a failed send, not a kill
  std::string token;
  if (!ReadLine(STDIN_FILENO, &token) || token.size() < 32) {
    std::fprintf(stderr, "podrun-agent lend: no token on stdin\n");
    return 2;
  }
  UniqueFd binary(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  struct stat st {};
  if (!binary || ::fstat(binary.get(), &st) != 0) {
    std::fprintf(stderr, "podrun-agent lend: /proc/self/exe: %s\n", std::strerror(errno));
    return 1;
  }
  UniqueFd listener;
  uint16_t port = 0;
  try {
    // The worker's pod address only, never every interface (docs/design.md decision 15): an
    // address this machine lacks fails the lend, and the launcher uploads to the peers itself.
    listener = Listen(args.address, &port);
  } catch (const AgentError& e) {
    std::fprintf(stderr, "podrun-agent lend: %s\n", e.what());
    return 1;
  }
  // Announced only once the listener exists: the launcher may hand the port out at once.
  std::printf("%s %u\n", kServingPrefix, port);
  std::fflush(stdout);
  LendLimits limits;
  limits.lifetime = args.lifetime;
  limits.max_clients = args.max_clients;
  ServeBinary(std::move(listener), binary.get(), st.st_size, token, STDIN_FILENO, limits);
  return 0;
}

}  // namespace podrun::agent
