// The supervisor's control grammar, written once for both ends: the supervisor (its control
// socket, its first answer on fd 3) and the agent that asks it (job/supervisor_client.h,
// job/job_runner.h). Every request and answer is one line.
//
// On fd 3, once the plan is read: "READY <job pid>" or "ERROR <reason>".
// On the control socket (SupervisorSocketPath), one request per connection:
//   "LOG <from_seq>"  → the records it holds in memory (not on disk) from from_seq on (a few MiB
//                       at most: ask again for more), encoded back to back as in the log file;
//                       then it closes the connection. The asker has every record before
//                       from_seq: those may leave memory when it is needed. A reply that starts
//                       after from_seq means the records between are gone from memory (if they
//                       are not on disk either, they are the log's gap)
//   "STOP <seconds>"  → "OK": SIGTERM to the job's group, SIGKILL after that grace period; a job
//                       not started yet ends without running once its go socket closes
//   "DISCARD"         → "OK": a prepared job that ends without starting records nothing (it was
//                       replaced by a new Prepare of the same attempt)
//   "CONFIRM-WITHIN <ms> <grace seconds>"
//                     → "OK": asked before GO; the start must be confirmed within <ms> of the
//                       job's release, else the supervisor stops the job with that grace
//                       (start_confirmation.h)
//   "CONFIRM"         → "OK" (confirmed, or nothing to confirm), or "ERROR <why>" once the window
//                       has passed and the job is being stopped for it
//   anything else     → "ERROR unknown request"
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace podrun::agent {

inline constexpr std::string_view kLogRequest = "LOG ";
inline constexpr std::string_view kStopRequest = "STOP ";
inline constexpr std::string_view kDiscardRequest = "DISCARD";
inline constexpr std::string_view kConfirmWithinRequest = "CONFIRM-WITHIN ";
inline constexpr std::string_view kConfirmRequest = "CONFIRM";
inline constexpr std::string_view kOkReply = "OK\n";
inline constexpr std::string_view kReadyReply = "READY ";
inline constexpr std::string_view kErrorReply = "ERROR ";

inline std::string LogRequest(uint64_t from_seq) {
  return std::string(kLogRequest) + std::to_string(from_seq);
}
inline std::string StopRequest(std::chrono::seconds grace) {
  return std::string(kStopRequest) + std::to_string(grace.count());
}
inline std::string ConfirmWithinRequest(std::chrono::milliseconds window,
                                        std::chrono::seconds grace) {
  return std::string(kConfirmWithinRequest) + std::to_string(window.count()) + " " +
         std::to_string(grace.count());
}
inline std::string ReadyReply(pid_t job_pid) {
  return std::string(kReadyReply) + std::to_string(job_pid) + "\n";
}
inline std::string ErrorReply(const std::string& reason) {
  return std::string(kErrorReply) + reason + "\n";
}

// The argument of a request line that starts with `word` ("LOG ", "STOP "), as a number;
// nullopt for a line that does not start with it.
inline std::optional<uint64_t> RequestNumber(std::string_view line, std::string_view word) {
  if (!line.starts_with(word)) return std::nullopt;
  return std::strtoull(std::string(line.substr(word.size())).c_str(), nullptr, 10);
}

}  // namespace podrun::agent
