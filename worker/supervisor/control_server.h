// The supervisor's control socket, SupervisorSocketPath (the grammar: supervisor_control.h): one
// request per connection, from its own user only, served from the supervisor's poll loop without
// blocking, each connection with a deadline (kRequestTimeout). It answers LOG from the job's
// LogWriter itself and keeps what STOP and DISCARD asked, and the start's confirmation
// (CONFIRM-WITHIN, CONFIRM), for the supervisor to act on.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "proto/unique_fd.h"
#include "worker/supervisor/log_writer.h"
#include "worker/supervisor/start_confirmation.h"

namespace podrun::agent {

// One thread: the supervisor's.
class ControlServer {
 public:
  using Clock = std::chrono::steady_clock;
  // Control connections served at once; more wait in the listen backlog meanwhile.
  static constexpr size_t kMaxClients = 8;
  // The most fds AddFds adds: the listening socket and kMaxClients connections.
  static constexpr size_t kMaxFds = kMaxClients + 1;

  // Listens on `socket` (throws std::runtime_error naming it). LOG is answered from `writer`,
  // which must outlive this.
  ControlServer(const std::filesystem::path& socket, LogWriter& writer);

  // Puts the listening socket (while fewer than kMaxClients are served) and the connections
  // into a poll set at fds[n...], each tagged first_tag + k in tags[]; returns the new n.
  nfds_t AddFds(pollfd* fds, int* tags, nfds_t n, int first_tag) const;
  // Handles the events of the fd AddFds tagged first_tag + k: accepts, reads, answers, sends.
  void OnEvents(int k);
  // Closes the connections that are done and the overdue ones.
  void EndClients();
  // The earliest deadline of a connection being served; Clock::time_point::max() when none.
  Clock::time_point Deadline() const;
  // After the job's end: serves the connections until a reader has said it has every record
  // held only in memory (a LOG request from past them: a reply sent is not a reply taken in, and
  // a reader may drop what it fetched and ask again) and every connection has its reply, or for
  // kLingerForReaders at most. Throws std::runtime_error if poll fails.
  void Linger();

  bool stop_requested() const { return stop_requested_; }
  std::chrono::seconds stop_grace() const { return stop_grace_; }  // of the latest STOP
  bool discarded() const { return discarded_; }
  // What CONFIRM-WITHIN and CONFIRM said; the supervisor arms it and asks it when it is due.
  StartConfirmation& confirmation() { return confirmation_; }
  // When a LOG request was last served; the clock's epoch before the first.
  Clock::time_point last_log_request() const { return last_log_request_; }

 private:
  // A control connection: its request line as read so far, then its reply as sent so far.
  struct Client {
    UniqueFd fd;
    std::string request, reply;
    size_t sent = 0;
    bool answered = false;
    Clock::time_point deadline;
  };

  void AcceptClient();
  void OnClient(size_t index);
  std::string Answer(const std::string& line);

  LogWriter& writer_;
  UniqueFd listen_;
  std::vector<Client> clients_;
  bool stop_requested_ = false, discarded_ = false;
  StartConfirmation confirmation_;
  std::chrono::seconds stop_grace_{0};
  Clock::time_point last_log_request_{};
  uint64_t had_through_ = 0;  // a LOG request said the reader has every record up to this seq
};

}  // namespace podrun::agent
