// JobAgents: the agents of a recorded job's workers, for the commands that work on a job from
// any terminal (logs, status, stop). It rebuilds the job's pod from the store, connects to the
// chosen workers' agents in parallel (SSH tunnel, or local for --local jobs), and keeps the
// workers it could not reach with their error. Also: what an agent's answer means for the store.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/connect/agent_connection.h"
#include "launcher/connect/pod.h"
#include "launcher/store/job_store.h"

namespace podrun {

// One worker's agent. `client` is null when the agent could not be reached; `error` says why.
struct JobAgent {
  int index = 0;
  std::string description;  // "w3 (root@10.0.0.5:22)" or "w3 (local)", for messages
  std::shared_ptr<AgentClient> client;
  std::string error;  // without the description, e.g. "ssh connect: Connection refused"
  // The agent's wall clock minus ours, measured at Hello: subtract it from the agent's
  // timestamps to compare them with another worker's.
  int64_t clock_offset_ns = 0;
};

class JobAgents {
 public:
  // Connects to the agents of workers `indexes` (pod-wide) of `job`, all at once, each
  // greeted with Hello; returns when each is connected or has failed (bounded by the job's
  // --connect-timeout and the Hello deadline). Throws Error(kUnreachable) when the agent binary
  // cannot be found, Error(kUsage) when the job's pod record is unreadable or an index is not
  // part of the pod. Sets SIGPIPE to be ignored (the SSH tunnels need that): writers to
  // stdout must handle EPIPE.
  JobAgents(const JobRecord& job, const std::vector<int>& indexes);
  // The same for the workers `indexes` of `pod` (no job: `podrun doctor`); `local_root` is the
  // --local workers' root.
  JobAgents(const Pod& pod, const std::filesystem::path& local_root,
            const std::vector<int>& indexes);
  JobAgents(const JobAgents&) = delete;
  JobAgents& operator=(const JobAgents&) = delete;

  // The agents in the order of `indexes`.
  std::vector<JobAgent>& agents() { return agents_; }

  // Connects worker `index`'s agent anew (after a broken stream), greets it, and sets and
  // returns its client. Throws Error(kUnreachable). Call only from the thread that uses that
  // agent; different agents may reconnect concurrently.
  std::shared_ptr<AgentClient> Reconnect(JobAgent& agent);

  // Prints "podrun: <description>: cannot reach its agent: <error>" for each unreachable agent;
  // returns how many there were.
  int ReportUnreachable() const;

  // The agent's log stream over a channel of its own where its link has one (AgentLink::
  // StartLogStream), else null.
  std::shared_ptr<AgentLogStream> StartLogStream(const JobAgent& agent, const std::string& job_id,
                                                 uint32_t attempt, uint64_t from_seq, bool follow,
                                                 AgentLogReader::OnBatch on_batch,
                                                 AgentLogReader::OnStreamDone on_done);

  // Runs f(agent) for every reachable agent on a thread of its own; waits for all.
  void ForEachReachable(const std::function<void(JobAgent&)>& f);

 private:
  std::optional<AgentConnections> connections_;  // parallel to agents_
  std::vector<JobAgent> agents_;
};

// Why a job is lost when the agent reports it so (its supervisor vanished).
std::string SupervisorVanished();

// "exit code 3", "killed by signal 9 (SIGKILL)", "stopped (exit code 143)", "never started",
// "the start was never confirmed: ..., so its agent stopped it (killed by signal 15 (SIGTERM))".
std::string DescribeProcessEnd(const ProcessEnd& end);

// "log gap: 123 bytes (4 chunks) not written to disk (No space left on device); the live
// stream had them", for status, logs and launch's outcome.
std::string DescribeLogGap(const AgentLogGap& gap);

// The worker state a process end means: lost (its supervisor vanished), stopped (by request or
// before it started), exited (exit code 0) or failed (also a start never confirmed: the gang
// never ran whole).
WorkerState StateOfEnd(const ProcessEnd& end);

// The store update for what an agent reported about a worker's process: nullopt when the
// answer settles nothing (the agent never heard of the attempt, or has only prepared it).
std::optional<WorkerUpdate> UpdateFromAgentStatus(const std::optional<AgentJobStatus>& status);

// The update recording a process end.
WorkerUpdate UpdateFromProcessEnd(const ProcessEnd& end);

// True for states after which the worker's process cannot run any more: exited, failed,
// stopped. (lost is not: the process may still run where the launcher cannot see it.)
bool IsFinal(WorkerState state);

// The attempt's state once every worker is final (or lost with a known end): by
// EndedAttemptState; nullopt while a worker is not.
std::optional<AttemptState> SettledAttemptState(const std::vector<WorkerRecord>& workers);

// Records the attempt as settled (state, exit code 0/1, end time = latest worker end) when
// every worker is final and the store still has it starting or running. Returns true if it did.
bool SettleAttemptIfDone(JobStore& store, const std::string& job_id, int attempt);

}  // namespace podrun
