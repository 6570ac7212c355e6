// Telling and confirming a job's supervisor about its start (see start_confirm.h).
#include "worker/job/start_confirm.h"

#include <optional>
#include <string>

#include "proto/process_end.h"
#include "worker/base/agent_error.h"
#include "worker/job/supervisor_client.h"
#include "worker/supervisor/supervisor_control.h"

namespace podrun::agent {
namespace {

constexpr auto kAskTimeout = std::chrono::milliseconds(3000);

std::string Name(const JobDir& dir) {
  return "job " + dir.path().parent_path().filename().string() + "/" +
         dir.path().filename().string();
}

// A reply line without its "ERROR " and its newline.
std::string ReplyText(std::string reply) {
  if (reply.starts_with(kErrorReply)) reply.erase(0, kErrorReply.size());
  while (!reply.empty() && reply.back() == '\n') reply.pop_back();
  return reply;
}

// What confirming an attempt that has ended means.
bool ConfirmEnded(const JobDir& dir, const ProcessEnd& end) {
  if (end.start_unconfirmed) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     Name(dir) + ": the confirmation came too late: " + kStartUnconfirmedReason +
                         ", and it was stopped");
  }
  if (end.never_started) {
    throw AgentError(ErrorKind::kFailedPrecondition, Name(dir) + " never started on this worker");
  }
  return true;
}

}  // namespace

void RequireConfirmation(const std::filesystem::path& home, const JobDir& dir,
                         std::chrono::milliseconds window, std::chrono::seconds grace) {
  const auto supervisor = dir.ReadSupervisor();
  const auto reply = supervisor ? AskSupervisor(home, supervisor->pid,
                                                ConfirmWithinRequest(window, grace), kAskTimeout)
                                : std::nullopt;
  if (reply != kOkReply) {
    throw AgentError(ErrorKind::kInternal,
                     Name(dir) + ": its supervisor did not take the start's confirmation window (" +
                         (reply ? ReplyText(*reply) : std::string("no answer")) +
                         "); nothing was started");
  }
}

bool ConfirmStart(const std::filesystem::path& home, const JobDir& dir, const JobSnapshot& snap) {
  if (snap.exit) return ConfirmEnded(dir, *snap.exit);
  if (snap.state != JobState::kRunning) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     Name(dir) + " has not been started on this worker");
  }
  const auto reply = AskSupervisor(home, snap.supervisor_pid, kConfirmRequest, kAskTimeout);
  if (reply == kOkReply) return false;
  // It may have ended meanwhile (and recorded how), or its supervisor vanished (now lost).
  if (const auto end = ReadJobSnapshot(dir, false).exit) return ConfirmEnded(dir, *end);
  throw AgentError(
      reply ? ErrorKind::kFailedPrecondition : ErrorKind::kInternal,
      Name(dir) + ": " + (reply ? ReplyText(*reply) : "its supervisor does not answer"));
}

}  // namespace podrun::agent
