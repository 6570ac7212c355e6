// A gang whose start was left in part: the launcher was lost between two workers' Start
// (PhaseFanOut::StartAll), so the workers that got theirs stopped their jobs once no
// confirmation came (ProcessEnd::start_unconfirmed), and the others are still prepared, waiting
// for a GO that never comes. Such an end on any worker proves it; then `status` and `logs` end
// the prepared processes (Stop, no grace: their supervisors record "never started"), so that
// every reader of the workers' files agrees and the attempt settles as failed, with the reason.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/connect/job_agents.h"

namespace podrun {

// What the agents of an attempt's workers answered to Status, by worker (nullopt: no record).
using AgentAnswers = std::map<int, std::optional<AgentJobStatus>>;

// True when some worker's job ended because its start was never confirmed.
bool StartAbandoned(const AgentAnswers& answers);

// Why a worker never started when the gang's start was abandoned, for status notes and logs.
std::string NeverStartedInAbandonedStart();

// The attempt's cause for the store: the reason, the workers that ran and those that never
// started, e.g. "the start was never confirmed: ... (started: w0; never started: w1-2)".
std::string AbandonedStartCause(const AgentAnswers& answers);

// When StartAbandoned(answers): ends the waiting process of every worker whose answer is
// prepared, in parallel (each through `agents`' client for it), and replaces its answer with
// its agent's new one. Returns the workers so ended; a worker whose agent cannot be reached
// (or whose Stop fails) keeps its answer. Does nothing otherwise.
std::vector<int> EndNeverStarted(JobAgents& agents, const std::string& job_id, uint32_t attempt,
                                 AgentAnswers& answers);

// The same while logs are followed: the prepared workers are ended at once if the answers
// already show the start abandoned, else as soon as a followed worker's end does. One thread.
class AbandonedStartWatch {
 public:
  AbandonedStartWatch(JobAgents& agents, std::string job_id, uint32_t attempt,
                      AgentAnswers answers);
  // Worker `index`'s process has ended so (its log was read to its end).
  void Ended(int index, const ProcessEnd& end);
  // True once some worker's start was never confirmed.
  bool abandoned() const { return StartAbandoned(answers_); }
  // AbandonedStartCause of what is known now.
  std::string Cause() const { return AbandonedStartCause(answers_); }

 private:
  JobAgents& agents_;
  const std::string job_id_;
  const uint32_t attempt_;
  AgentAnswers answers_;
};

}  // namespace podrun
