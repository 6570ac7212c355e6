// Settling a gang whose start was left in part (see abandoned_start.h).
#include "launcher/connect/abandoned_start.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "launcher/pod/worker_range.h"
#include "proto/process_end.h"

namespace podrun {

bool StartAbandoned(const AgentAnswers& answers) {
  for (const auto& [index, status] : answers) {
    if (status && status->end && status->end->start_unconfirmed) return true;
  }
  return false;
}

std::string NeverStartedInAbandonedStart() {
  return "never started: the launcher was lost while starting the gang (its start never came)";
}

std::string AbandonedStartCause(const AgentAnswers& answers) {
  std::vector<int> started, never;
  for (const auto& [index, status] : answers) {
    const bool ran = status && status->state != AgentJobState::kPrepared &&
                     !(status->end && status->end->never_started);
    (ran ? started : never).push_back(index);
  }
  std::string parts;
  if (!started.empty()) parts += "started: w" + FormatWorkerRange(started);
  if (!never.empty()) {
    parts +=
        (parts.empty() ? "" : "; ") + std::string("never started: w") + FormatWorkerRange(never);
  }
  return std::string(kStartUnconfirmedReason) + (parts.empty() ? "" : " (" + parts + ")");
}

std::vector<int> EndNeverStarted(JobAgents& agents, const std::string& job_id, uint32_t attempt,
                                 AgentAnswers& answers) {
  std::vector<int> ended;
  if (!StartAbandoned(answers)) return ended;
  std::mutex mutex;
  agents.ForEachReachable([&](JobAgent& agent) {
    auto it = answers.find(agent.index);
    if (it == answers.end() || !it->second || it->second->state != AgentJobState::kPrepared) {
      return;
    }
    try {
      agent.client->Stop(job_id, attempt, std::chrono::seconds(0));  // it never runs
      auto now = agent.client->Status(job_id, attempt);
      std::lock_guard lock(mutex);
      it->second = now;
      ended.push_back(agent.index);
    } catch (const std::exception&) {
      // Unreachable now: the next command that reaches it ends it.
    }
  });
  std::sort(ended.begin(), ended.end());
  return ended;
}

AbandonedStartWatch::AbandonedStartWatch(JobAgents& agents, std::string job_id, uint32_t attempt,
                                         AgentAnswers answers)
    : agents_(agents), job_id_(std::move(job_id)), attempt_(attempt), answers_(std::move(answers)) {
  EndNeverStarted(agents_, job_id_, attempt_, answers_);
}

void AbandonedStartWatch::Ended(int index, const ProcessEnd& end) {
  auto it = answers_.find(index);
  if (it == answers_.end() || !it->second) return;
  const bool was_abandoned = abandoned();
  it->second->end = end;
  if (it->second->state == AgentJobState::kPrepared ||
      it->second->state == AgentJobState::kRunning) {
    it->second->state =
        StateOfEnd(end) == WorkerState::kLost ? AgentJobState::kLost : AgentJobState::kStopped;
  }
  if (!was_abandoned && end.start_unconfirmed) {
    // Asked again: a worker prepared when the logs were asked for may have started since.
    for (auto& [w, status] : answers_) {
      if (w == index || !status || status->state != AgentJobState::kPrepared) continue;
      for (JobAgent& agent : agents_.agents()) {
        if (agent.index != w || !agent.client) continue;
        try {
          status = agent.client->Status(job_id_, attempt_);
        } catch (const std::exception&) {
        }
      }
    }
    EndNeverStarted(agents_, job_id_, attempt_, answers_);
  }
}

}  // namespace podrun
