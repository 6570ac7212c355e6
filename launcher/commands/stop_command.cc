// `podrun stop`: Stop RPCs to the job's agents in parallel, then the store.
#include "launcher/commands/stop_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "launcher/base/exit_status.h"
#include "launcher/connect/job_agents.h"
#include "launcher/output/say.h"
#include "launcher/recovery/keeper.h"
#include "launcher/spec/spec.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

constexpr int kDefaultGraceSeconds = 10;

int SpecGraceSeconds(const JobRecord& job) {
  try {
    return ParseRecordedSpec(job.spec_text, job.spec_path).grace_seconds;
  } catch (const Error& e) {
    Say(fmt::format("warning: job {}: cannot read its stored spec ({}); grace period {} s", job.id,
                    e.what(), kDefaultGraceSeconds));
    return kDefaultGraceSeconds;
  }
}

// What happened to one worker.
struct Outcome {
  std::string message;
  std::optional<WorkerUpdate> update;
  bool stopped_running = false;  // its process was running and was stopped now
};

Outcome StopOne(JobAgent& agent, const std::string& job_id, int attempt,
                std::chrono::seconds grace) {
  Outcome out;
  if (!agent.client->Status(job_id, static_cast<uint32_t>(attempt))) {
    out.message = "not started there (its agent has no record of this attempt)";
    out.update = WorkerUpdate{.state = WorkerState::kStopped,
                              .end_ns = NowUnixNs(),
                              .error = "stopped before it started"};
    return out;
  }
  AgentStopReply reply = agent.client->Stop(job_id, static_cast<uint32_t>(attempt), grace);
  out.update = UpdateFromProcessEnd(reply.end);
  out.update->error = "";
  if (reply.end.never_started) {
    out.message = "stopped before it started";
  } else if (reply.was_running) {
    out.update->state = WorkerState::kStopped;
    out.stopped_running = true;
    ProcessEnd how = reply.end;
    how.stopped_by_request = false;
    out.message =
        reply.killed ? fmt::format("killed with SIGKILL after the {} s grace period", grace.count())
                     : fmt::format("stopped ({})", DescribeProcessEnd(how));
  } else {
    out.message = "had already ended: " + DescribeProcessEnd(reply.end);
  }
  return out;
}

// A recovery that no keeper carries on any more (its keeper gave it up on this stop's SIGTERM,
// or was killed in the middle): nothing may say that the job recovers or that a node is to be
// created again; the latest attempt reads stopped. A keeper still running (on another host)
// keeps its own records.
void EndAbandonedRecovery(JobStore& store, const std::string& job_id) {
  if (DriverHolder(PodrunHome(), job_id)) return;
  RecoveryRecords records(store);
  const bool recovering = records.Recovering(job_id).has_value();
  const std::vector<RecreationRecord> intents = records.Recreations(job_id);
  if (!recovering && intents.empty()) return;
  records.EndRecovering(job_id);
  for (const RecreationRecord& r : intents) records.EndRecreation(job_id, r);
  const std::optional<AttemptRecord> attempt = store.LatestAttempt(job_id);
  if (attempt && attempt->state != AttemptState::kStarting &&
      attempt->state != AttemptState::kRunning && attempt->state != AttemptState::kStopped) {
    store.SetAttemptState(job_id, attempt->number, AttemptState::kStopped, attempt->exit_code,
                          attempt->ended_ns.value_or(NowUnixNs()));
  }
  Say(fmt::format("job {}: its recovery is given up: nothing restarts it", job_id));
}

}  // namespace

ExitCode RunStop(const StopRequest& request) {
  if (request.grace_seconds && *request.grace_seconds < 0) {
    throw UsageError("--grace must be 0 or more seconds");
  }
  JobStore store(PodrunHome() / "podrun.db");
  JobRecord job = store.ResolveJob(request.job);
  // First: the keeper would restart the gang this stop ends.
  EndKeeper(store, PodrunHome(), job.id, "ended with the job (podrun stop)");
  EndAbandonedRecovery(store, job.id);
  std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  if (!attempt) throw UsageError(fmt::format("job {} has no attempt to stop", job.id));
  int number = attempt->number;

  std::vector<int> active;
  for (const WorkerRecord& w : store.Workers(job.id, number)) {
    if (IsFinal(w.state) && !w.stop_pending_grace) {
      std::string how;
      if (w.exit_code || w.signal) how = " (" + DescribeExit(w.exit_code, w.signal) + ")";
      Say(fmt::format("w{} ({}): already {}{}", w.index, w.host, WorkerStateName(w.state), how));
    } else {
      active.push_back(w.index);
    }
  }
  if (active.empty()) {
    SettleAttemptIfDone(store, job.id, number);
    Say(fmt::format("job {}: nothing to stop, every worker's process has ended", job.id));
    return ExitCode::kOk;
  }
  std::chrono::seconds grace(request.grace_seconds.value_or(SpecGraceSeconds(job)));
  Say(fmt::format("stopping job {} (attempt {}) on {} worker{} (grace period {} s)", job.id, number,
                  active.size(), active.size() == 1 ? "" : "s", grace.count()));

  JobAgents agents(job, active);
  int unreachable = agents.ReportUnreachable();
  std::mutex mutex;
  std::map<int, Outcome> outcomes;
  agents.ForEachReachable([&](JobAgent& agent) {
    Outcome out;
    try {
      out = StopOne(agent, job.id, number, grace);
    } catch (const std::exception& e) {
      out.message = std::string("cannot stop: ") + e.what();
    }
    Say(fmt::format("{}: {}", agent.description, out.message));
    std::lock_guard lock(mutex);
    outcomes[agent.index] = std::move(out);
  });

  bool stopped_any = false;
  for (int index : active) {
    auto it = outcomes.find(index);
    if (it != outcomes.end() && it->second.update) {
      it->second.update->stop_pending_grace = -1;
      store.UpdateWorker(job.id, number, index, *it->second.update);
      stopped_any = stopped_any || it->second.stopped_running;
    } else {
      // Delivered by the next podrun command that reaches the worker (status, stop).
      store.UpdateWorker(job.id, number, index,
                         {.stop_pending_grace = static_cast<int>(grace.count())});
      if (it != outcomes.end()) ++unreachable;  // the unreachable ones are counted already
    }
  }
  AttemptRecord now = store.GetAttempt(job.id, number);
  bool active_state = now.state == AttemptState::kStarting || now.state == AttemptState::kRunning;
  if (stopped_any && unreachable == 0 && active_state) {
    store.SetAttemptState(job.id, number, AttemptState::kStopped, 1, NowUnixNs());
  } else {
    SettleAttemptIfDone(store, job.id, number);
  }
  if (unreachable > 0) {
    Say(fmt::format(
        "job {}: {} worker{} could not be stopped (see above); the stop is recorded and "
        "delivered by the next podrun status or stop that reaches {}",
        job.id, unreachable, unreachable == 1 ? "" : "s", unreachable == 1 ? "it" : "them"));
    return ExitCode::kUnreachable;
  }
  Say(fmt::format("job {} stopped", job.id));
  return ExitCode::kOk;
}

namespace {

CommandRun AddStopOptions(CLI::App& app) {
  app.description(
      "Stop JOB's latest attempt on every worker: SIGTERM to its processes, SIGKILL\n"
      "after the grace period. Prints what happened on each worker.\n"
      "Exit: 3 if a worker's agent cannot be reached, else 0.");
  struct Options {
    StopRequest request;
    int grace = -1;
  };
  auto o = std::make_shared<Options>();
  app.add_option("job", o->request.job, "Job id, unique id prefix, or name")->required();
  CLI::Option* grace =
      app.add_option("--grace", o->grace,
                     "Seconds between SIGTERM and SIGKILL (default: the spec's grace_seconds)");
  return [o, grace] {
    if (grace->count() > 0) o->request.grace_seconds = o->grace;
    return RunStop(o->request);
  };
}

}  // namespace

Command StopCommand() { return {"stop", "stop a job on every worker", AddStopOptions}; }

}  // namespace podrun
