// Reaching a recorded job's agents, and reading their answers into the store.
#include "launcher/connect/job_agents.h"

#include <fmt/format.h>

#include <algorithm>
#include <csignal>

#include "launcher/base/error.h"
#include "launcher/base/exit_status.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"

namespace podrun {
namespace {

// The message of `e` without a leading "<description>: " (links add it; we print it apart).
std::string Reason(const std::exception& e, const std::string& description) {
  std::string message = e.what();
  if (message.rfind(description + ": ", 0) == 0) message.erase(0, description.size() + 2);
  return message;
}

Pod CheckedPodOfJob(const JobRecord& job, const std::vector<int>& indexes) {
  std::filesystem::path local_root;
  Pod pod = PodOfJob(job, &local_root);
  for (int index : indexes) {
    if (index < 0 || static_cast<size_t>(index) >= pod.workers.size()) {
      throw UsageError(
          fmt::format("job {}: worker {} is not part of its pod ({})", job.id, index, job.pod));
    }
  }
  return pod;
}

std::filesystem::path LocalRootOf(const JobRecord& job) {
  std::filesystem::path local_root;
  PodOfJob(job, &local_root);
  return local_root;
}

}  // namespace

JobAgents::JobAgents(const JobRecord& job, const std::vector<int>& indexes)
    : JobAgents(CheckedPodOfJob(job, indexes), LocalRootOf(job), indexes) {}

JobAgents::JobAgents(const Pod& pod, const std::filesystem::path& local_root,
                     const std::vector<int>& indexes) {
  // The tunnels write to socketpairs whose gRPC end may close first.
  ::signal(SIGPIPE, SIG_IGN);
  connections_.emplace(pod, local_root, indexes, /*relay_agent=*/false);
  for (const auto& connection : connections_->all()) {
    JobAgent agent;
    agent.index = connection->index();
    agent.description = connection->description();
    agents_.push_back(std::move(agent));
  }
  ParallelFor(agents_.size(), [&](size_t i) {
    try {
      Reconnect(agents_[i]);
    } catch (const std::exception& e) {
      agents_[i].error = Reason(e, agents_[i].description);
    }
  });
}

std::shared_ptr<AgentLogStream> JobAgents::StartLogStream(
    const JobAgent& agent, const std::string& job_id, uint32_t attempt, uint64_t from_seq,
    bool follow, AgentLogReader::OnBatch on_batch, AgentLogReader::OnStreamDone on_done) {
  const auto i = static_cast<size_t>(&agent - agents_.data());
  return connections_->all().at(i)->link().StartLogStream(job_id, attempt, from_seq, follow,
                                                          std::move(on_batch), std::move(on_done));
}

std::shared_ptr<AgentClient> JobAgents::Reconnect(JobAgent& agent) {
  size_t i = static_cast<size_t>(&agent - agents_.data());
  try {
    AgentConnection& connection = *connections_->all().at(i);
    auto client = connection.Connect(AgentConnection::Greeting::kMeasureClock);
    agent.clock_offset_ns = connection.clock_offset_ns();
    agent.client = client;
    agent.error.clear();
    return client;
  } catch (const std::exception& e) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{}: {}", agent.description, Reason(e, agent.description)));
  }
}

int JobAgents::ReportUnreachable() const {
  int n = 0;
  for (const JobAgent& agent : agents_) {
    if (agent.client) continue;
    Say(fmt::format("{}: cannot reach its agent: {}", agent.description, agent.error));
    ++n;
  }
  return n;
}

void JobAgents::ForEachReachable(const std::function<void(JobAgent&)>& f) {
  std::vector<JobAgent*> reachable;
  for (JobAgent& agent : agents_) {
    if (agent.client) reachable.push_back(&agent);
  }
  ParallelFor(reachable.size(), [&](size_t i) { f(*reachable[i]); });
}

std::string SupervisorVanished() {
  return "its supervisor vanished without recording how the job ended (killed, or the machine "
         "rebooted)";
}

std::string DescribeProcessEnd(const ProcessEnd& end) {
  if (end.never_started) return "never started";
  if (end.lost) return "lost: " + SupervisorVanished();
  const std::string how = DescribeExit(end.exit_code, end.signal);
  if (end.start_unconfirmed) {
    return fmt::format("{}, so its agent stopped it ({})", kStartUnconfirmedReason, how);
  }
  return end.stopped_by_request ? "stopped (" + how + ")" : how;
}

std::string DescribeLogGap(const AgentLogGap& gap) {
  return fmt::format("log gap: {} bytes ({} chunk{}) of output not written to its disk ({})",
                     gap.bytes, gap.chunks, gap.chunks == 1 ? "" : "s",
                     gap.cause.empty() ? "write failed" : gap.cause);
}

WorkerState StateOfEnd(const ProcessEnd& end) {
  if (end.lost) return WorkerState::kLost;
  if (end.start_unconfirmed) return WorkerState::kFailed;  // the gang never ran whole
  if (end.stopped_by_request || end.never_started) return WorkerState::kStopped;
  return end.exit_code && *end.exit_code == 0 ? WorkerState::kExited : WorkerState::kFailed;
}

WorkerUpdate UpdateFromProcessEnd(const ProcessEnd& end) {
  WorkerUpdate update{.state = StateOfEnd(end), .exit_code = end.exit_code, .signal = end.signal};
  if (end.end_time_ns > 0) update.end_ns = end.end_time_ns;
  if (end.lost || end.start_unconfirmed) update.error = DescribeProcessEnd(end);
  return update;
}

std::optional<WorkerUpdate> UpdateFromAgentStatus(const std::optional<AgentJobStatus>& status) {
  if (!status) return std::nullopt;
  switch (status->state) {
    case AgentJobState::kRunning: {
      WorkerUpdate update{.state = WorkerState::kRunning};
      if (status->start_time_ns > 0) update.start_ns = status->start_time_ns;
      return update;
    }
    case AgentJobState::kExited:
    case AgentJobState::kStopped:
    case AgentJobState::kLost: {
      ProcessEnd end = status->end.value_or(ProcessEnd{});
      if (status->state == AgentJobState::kStopped && !end.start_unconfirmed) {
        end.stopped_by_request = true;
      }
      if (status->state == AgentJobState::kLost) {
        end.lost = true;
        if (end.end_time_ns == 0) end.end_time_ns = NowUnixNs();
      }
      WorkerUpdate update = UpdateFromProcessEnd(end);
      if (status->start_time_ns > 0) update.start_ns = status->start_time_ns;
      return update;
    }
    case AgentJobState::kUnknown:
    case AgentJobState::kPrepared:
      return std::nullopt;
  }
  return std::nullopt;
}

bool IsFinal(WorkerState state) {
  return state == WorkerState::kExited || state == WorkerState::kFailed ||
         state == WorkerState::kStopped;
}

std::optional<AttemptState> SettledAttemptState(const std::vector<WorkerRecord>& workers) {
  std::vector<WorkerState> states;
  for (const WorkerRecord& w : workers) {
    // A lost worker has ended once its end is known (its agent confirmed that the job is gone).
    const bool lost_for_good = w.state == WorkerState::kLost && w.end_ns;
    if (!IsFinal(w.state) && !lost_for_good) return std::nullopt;
    states.push_back(w.state);
  }
  return EndedAttemptState(states);
}

bool SettleAttemptIfDone(JobStore& store, const std::string& job_id, int attempt) {
  AttemptRecord record = store.GetAttempt(job_id, attempt);
  if (record.state != AttemptState::kStarting && record.state != AttemptState::kRunning) {
    return false;
  }
  std::vector<WorkerRecord> workers = store.Workers(job_id, attempt);
  std::optional<AttemptState> state = SettledAttemptState(workers);
  if (!state) return false;
  int64_t ended = 0;
  for (const WorkerRecord& w : workers) ended = std::max(ended, w.end_ns.value_or(0));
  store.SetAttemptState(job_id, attempt, *state, *state == AttemptState::kSucceeded ? 0 : 1,
                        ended > 0 ? ended : NowUnixNs());
  return true;
}

}  // namespace podrun
