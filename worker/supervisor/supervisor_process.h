// The supervisor process's internals (supervisor.h is the interface): its constants and the
// Supervisor class, shared by the files that implement it. Include only from worker/supervisor/.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "proto/log_record.h"
#include "proto/process_identity.h"
#include "proto/unique_fd.h"
#include "worker/base/agent_error.h"
#include "worker/base/unix_socket.h"
#include "worker/base/wall_clock.h"
#include "worker/jobdir/job_dir.h"
#include "worker/supervisor/log_writer.h"
#include "worker/supervisor/plan_codec.h"
#include "worker/supervisor/prepared_child.h"
#include "worker/supervisor/supervisor.h"

extern char** environ;

namespace podrun::agent::supervisor_internal {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kControlFd = 3;
constexpr int kGoFd = 4;
constexpr size_t kChunkBytes = 256u << 10;  // the most one record of output holds
constexpr size_t kPipeBytes = 1u << 20;     // the job's stdout and stderr pipes
constexpr size_t kMaxPlanBytes = 64u << 20;
constexpr off_t kReserveBytes = 256 << 10;
// After the leader exits, how long the rest of its group may keep the pipes open before it is
// killed, and how long after that the pipes are drained before they are abandoned.
constexpr auto kDrainAfterExit = seconds(2);
constexpr auto kKillWait = seconds(30);
constexpr auto kRetryWriteInterval = seconds(1);
// After the end, how long records held only in memory wait for a live reader to fetch them.
constexpr auto kLingerForReaders = seconds(30);
// A control connection gets this long to send its request line, and then this long for each
// part of its reply it takes; it is closed after that. Served without blocking: a client that
// stalls never holds up the job's pipes (or the other clients).
constexpr auto kRequestTimeout = milliseconds(2000);
// Control connections served at once; more wait in the listen backlog meanwhile.
constexpr size_t kMaxClients = 8;
constexpr size_t kMaxRequestBytes = 256;
// While output is held in memory and a reader fetched it this recently, a full buffer pauses the
// job's pipes (the job waits) rather than dropping output. A reader that keeps up asks several
// times a second; this long is for one whose own output (an SSH channel) is slow for a while.
constexpr auto kReaderActiveWindow = seconds(10);
// The most held output one LOG reply carries (the reader asks again for more), so that what a
// reply costs in memory, on both sides, stays small beside LogWriter::kMaxHeldBytes.
constexpr size_t kMaxLogReplyBytes = 2u << 20;

inline bool GroupAlive(pid_t pgid) { return ::kill(-pgid, 0) == 0 || errno == EPERM; }

inline int MsUntil(Clock::time_point t) {
  auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 60'000));
}

// One supervisor process: the job's child, its pipes and log, the control socket, the end.
// Its parts: supervisor.cc (the run and its loop), supervisor_plan.cc (the plan and the fork),
// supervisor_control.cc (requests on the control socket), supervisor_end.cc (the stop, drain and
// kill policy, the recorded end).
class Supervisor {
 public:
  explicit Supervisor(const SuperviseArgs& args)
      : args_(args), dir_(args.home, args.job_id, args.attempt) {}
  int Run();

 private:
  void ReadPlan();
  pid_t ForkChild();
  void Loop();
  void OnChildReport();
  void OnSignal();
  void ReapChildren();  // the leader and any orphan of the job (we are their subreaper)
  // The control socket (supervisor_control.cc): AddControlFds puts the listening socket and
  // the clients' connections into a poll set (their kinds: kListenKind, kClientKind + index);
  // OnControl handles one's events; EndClients closes the finished and the overdue ones.
  static constexpr int kListenKind = 1, kClientKind = 5;
  nfds_t AddControlFds(pollfd* fds, int* kinds, nfds_t n) const;
  void OnControl(int kind);
  void EndClients();
  Clock::time_point ClientsDeadline() const;
  void AcceptClient();
  void OnClient(size_t index);
  std::string Answer(const std::string& line);
  void ReadPipe(int s);
  void Finalize();
  void Linger();
  void Say(const std::string& text) {
    std::fprintf(stderr, "podrun-agent supervise %s/%u: %s\n", args_.job_id.c_str(), args_.attempt,
                 text.c_str());
  }

  const SuperviseArgs args_;
  const JobDir dir_;
  std::string workdir_, run_;
  std::vector<std::string> env_;

  UniqueFd listen_, sigfd_, ran_, pipes_[2];
  std::optional<AppendOnlyLog> log_;
  std::optional<LogWriter> writer_;
  pid_t child_ = 0;
  std::optional<int> wait_status_;
  int64_t end_time_ns_ = 0;
  std::optional<ChildReport> report_;  // from the `ran` pipe
  bool ran_closed_ = false;
  bool stop_requested_ = false, discard_ = false, term_sent_ = false, killed_rest_ = false;
  bool killed_ = false;  // a requested stop needed SIGKILL
  seconds stop_grace_{0};
  Clock::time_point kill_at_ = Clock::time_point::max();
  Clock::time_point drain_until_ = Clock::time_point::max();
  Clock::time_point next_retry_ = Clock::time_point::max();
  Clock::time_point reader_seen_{};  // a LOG request was last served (or the job started)
  uint64_t fetched_through_ = 0;     // the highest seq a LOG request has been sent

  // A control connection: its request line as read so far, then its reply as sent so far.
  struct Client {
    UniqueFd fd;
    std::string request, reply;
    size_t sent = 0;
    bool answered = false;
    Clock::time_point deadline;
  };
  std::vector<Client> clients_;
};

}  // namespace podrun::agent::supervisor_internal
