// `podrun status`: the store's view of a job, refreshed from the agents of its active workers,
// with the workers' steps and the attempt's hang report (status_progress.h).
#include "launcher/commands/status_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "launcher/base/exit_status.h"
#include "launcher/commands/status_progress.h"
#include "launcher/connect/abandoned_start.h"
#include "launcher/connect/job_agents.h"
#include "launcher/connect/job_pod.h"
#include "launcher/insight/step_cache.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/time_format.h"
#include "launcher/pod/worker_range.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/recovery_report.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recovery_records.h"
#include "launcher/store/run_records.h"

namespace podrun {
namespace {

// What asking the agents added to the store's view, per worker: a note for the user.
using Notes = std::map<int, std::string>;

// Asks the agents of the workers the store shows as not ended, records their answers in the
// store, and returns the notes to show. An attempt that could not start ran nowhere: its
// agents are not asked. While a worker is still prepared, the ended ones are asked too (not
// recorded again): one whose start was never confirmed means the gang's start was abandoned,
// and the prepared ones never start (connect/abandoned_start.h).
Notes RefreshFromAgents(JobStore& store, const JobRecord& job, int attempt) {
  Notes notes;
  bool start_failed = store.GetAttempt(job.id, attempt).state == AttemptState::kStartFailed;
  std::vector<int> active;
  std::set<int> observed;                   // ended in the store: asked only to see the start
  std::map<int, int> pending_stops;         // worker -> grace seconds of a stop not delivered yet
  std::map<int, std::string> lost_reasons;  // why a worker with a pending stop was lost
  const std::vector<WorkerRecord> recorded = store.Workers(job.id, attempt);
  // A live driver (an attached launch, a keeper) records what its workers do. One it is still
  // connecting to (perhaps on a VM made a moment ago) or has lost is the driver's to reach, not
  // status's; while it remakes a preempted slice, so is a lost worker's pending stop (its VM is
  // gone, or going): asking would only knock at VMs being made again, once per status.
  const bool driven = DriverHolder(PodrunHome(), job.id) ||
                      ViewKeeper(store, PodrunHome(), job).state == KeeperState::kRunning;
  const bool recovering = driven && RecoveryRecords(store).Recovering(job.id).has_value();
  const bool any_prepared = std::any_of(recorded.begin(), recorded.end(), [](const auto& w) {
    return w.state == WorkerState::kPrepared;
  });
  auto left_to_driver = [&](const WorkerRecord& w) {
    const bool reaching = w.state == WorkerState::kPending || w.state == WorkerState::kConnecting ||
                          w.state == WorkerState::kLost;
    return driven && reaching &&
           (!w.stop_pending_grace || (recovering && w.state == WorkerState::kLost));
  };
  for (const WorkerRecord& w : recorded) {
    if (left_to_driver(w)) continue;
    if (w.stop_pending_grace) {
      if (w.state == WorkerState::kLost) lost_reasons[w.index] = w.error;
      pending_stops[w.index] = *w.stop_pending_grace;
      active.push_back(w.index);
      continue;
    }
    if (IsFinal(w.state)) {
      if (any_prepared && !start_failed) {
        observed.insert(w.index);
        active.push_back(w.index);
      }
      continue;
    }
    if (start_failed) {
      notes[w.index] = "not started: the attempt could not start on every worker";
    } else {
      active.push_back(w.index);
    }
  }
  if (active.empty()) return notes;

  AgentAnswers answers;
  std::vector<FetchedSteps> steps;  // the workers' step records (insight/step_cache.h)
  std::vector<int> delivered;       // pending stops delivered now
  try {
    JobAgents agents(job, active);
    for (const JobAgent& agent : agents.agents()) {
      if (!agent.client) notes[agent.index] = "agent unreachable: " + agent.error;
    }
    std::mutex mutex;
    agents.ForEachReachable([&](JobAgent& agent) {
      try {
        if (auto it = pending_stops.find(agent.index); it != pending_stops.end()) {
          // The gang was stopped while this worker was out of reach: stop it now.
          agent.client->Stop(job.id, static_cast<uint32_t>(attempt),
                             std::chrono::seconds(it->second));
          std::lock_guard lock(mutex);
          delivered.push_back(agent.index);
          const std::string& lost = lost_reasons[agent.index];
          notes[agent.index] = "stopped now: podrun's stop of the gang could not reach it then" +
                               (lost.empty() ? "" : " (lost: " + lost + ")");
        }
        auto status = agent.client->Status(job.id, static_cast<uint32_t>(attempt));
        std::optional<AgentSteps> worker_steps;
        if (status && status->state != AgentJobState::kPrepared && !observed.count(agent.index)) {
          // Its steps, as its supervisor read them (also those of an end no driver saw).
          worker_steps = agent.client->Steps(job.id, static_cast<uint32_t>(attempt));
        }
        std::lock_guard lock(mutex);
        answers[agent.index] = status;
        if (worker_steps) steps.push_back({agent.index, *worker_steps, agent.clock_offset_ns});
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        notes[agent.index] = std::string("agent unreachable: ") + e.what();
      }
    });
    // A gang whose start was abandoned: its prepared workers never start.
    for (int index : EndNeverStarted(agents, job.id, static_cast<uint32_t>(attempt), answers)) {
      notes[index] = NeverStartedInAbandonedStart();
    }
  } catch (const Error& e) {
    for (int index : active) notes[index] = std::string("cannot ask its agent: ") + e.what();
  }

  for (int index : delivered) {
    store.UpdateWorker(job.id, attempt, index, {.stop_pending_grace = -1});
  }
  // Nobody follows the job (a `launch -d` without keeper): the stragglers are worked out here,
  // from the workers' own step records.
  CacheSteps(store, job.id, attempt, steps, NowUnixNs(), StragglerAfter(job),
             driven ? std::nullopt : std::optional<StragglerRule>(StragglerRuleOf(job)));
  const bool abandoned = StartAbandoned(answers);
  for (const auto& [index, status] : answers) {
    if (observed.count(index)) continue;  // ended already: its record stands
    if (!status) {
      notes[index] = "its agent has no record of this attempt: not started there";
    } else if (status->state == AgentJobState::kPrepared && !notes.count(index)) {
      notes[index] = "prepared; waiting for the start";
    }
    if (std::optional<WorkerUpdate> update = UpdateFromAgentStatus(status)) {
      // The agent's answer replaces an earlier note (a "lost" the launcher guessed, its reason);
      // a full disk on the worker is worth keeping.
      if (!update->error) update->error = status->gap ? DescribeLogGap(*status->gap) : "";
      // Stopped now after it was lost (a preempted node that came back): keep why it was lost.
      if (auto it = lost_reasons.find(index); it != lost_reasons.end() && !it->second.empty()) {
        update->error =
            "lost: " + it->second + (update->error->empty() ? "" : "; " + *update->error);
      }
      if (abandoned && status->end && status->end->never_started) {
        update->error = NeverStartedInAbandonedStart();
      }
      store.UpdateWorker(job.id, attempt, index, *update);
    }
  }
  const AttemptState state = store.GetAttempt(job.id, attempt).state;
  if (abandoned && (state == AttemptState::kStarting || state == AttemptState::kRunning)) {
    store.SetAttemptEnd(job.id, attempt, AttemptEnd::kFailure, AbandonedStartCause(answers));
  }
  SettleAttemptIfDone(store, job.id, attempt);
  return notes;
}

std::string ExitText(const WorkerRecord& w) { return ShortExit(w.exit_code, w.signal); }

// What the store records of the attempt's progress: each worker's step (by worker) and the hang
// report, if the stall watch made one.
struct Progress {
  std::map<int, WorkerProgress> workers;
  std::optional<HangReportRecord> hang_report;

  WorkerProgress Of(int worker) const {
    auto it = workers.find(worker);
    if (it != workers.end()) return it->second;
    WorkerProgress none;
    none.worker = worker;
    return none;
  }
};

Progress ReadProgress(JobStore& store, const std::string& job_id, int attempt) {
  Progress out;
  RunRecords records(store);
  for (WorkerProgress& p : records.Progress(job_id, attempt)) out.workers[p.worker] = p;
  out.hang_report = records.HangReport(job_id, attempt);
  return out;
}

std::string NoteOf(const WorkerRecord& w, const Notes& notes) {
  auto it = notes.find(w.index);
  if (it != notes.end()) return it->second;
  return w.error;
}

// The note column: the note, and the straggler's reason when it is one.
std::string NoteWithStraggler(const WorkerRecord& w, const Notes& notes, const Progress& progress) {
  std::string note = NoteOf(w, notes);
  const std::optional<StragglerNote> straggler = progress.Of(w.index).straggler;
  if (!straggler) return note;
  return "straggler: " + straggler->Text() + (note.empty() ? "" : "; " + note);
}

nlohmann::json OptionalTime(const std::optional<int64_t>& ns) {
  return ns ? nlohmann::json(FormatRfc3339(*ns)) : nlohmann::json();
}

template <class T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

void PrintJson(const JobRecord& job, const std::optional<AttemptRecord>& attempt,
               const std::vector<WorkerRecord>& workers, const Notes& notes,
               const Progress& progress, const nlohmann::json& recovery) {
  nlohmann::json out;
  out["job"] = {{"id", job.id},
                {"name", job.name},
                {"pod", job.pod},
                {"zones", JobZones(job)},
                {"created", FormatRfc3339(job.created_ns)},
                {"created_ns", job.created_ns}};
  if (attempt) {
    out["attempt"] = {
        {"number", attempt->number},
        {"state", AttemptStateName(attempt->state)},
        {"reason", AttemptReasonName(attempt->reason)},
        {"ended_by", attempt->ended_by == AttemptEnd::kNone
                         ? nlohmann::json()
                         : nlohmann::json(AttemptEndName(attempt->ended_by))},
        {"workers", attempt->workers},
        {"exit_code", OrNull(attempt->exit_code)},
        {"started", FormatRfc3339(attempt->started_ns)},
        {"started_ns", attempt->started_ns},
        {"ended", OptionalTime(attempt->ended_ns)},
        {"ended_ns", OrNull(attempt->ended_ns)},
        {"resumed_from",
         attempt->resumed_from.empty() ? nlohmann::json() : nlohmann::json(attempt->resumed_from)},
        {"cause", attempt->cause.empty() ? nlohmann::json() : nlohmann::json(attempt->cause)}};
    if (progress.hang_report) {
      out["attempt"]["hang_report"] = HangReportJson(*progress.hang_report);
    }
  } else {
    out["attempt"] = nullptr;
  }
  out["workers"] = nlohmann::json::array();
  for (const WorkerRecord& w : workers) {
    std::string note = NoteOf(w, notes);
    nlohmann::json worker = {{"worker", w.index},
                             {"host", w.host},
                             {"state", WorkerStateName(w.state)},
                             {"exit_code", OrNull(w.exit_code)},
                             {"signal", OrNull(w.signal)},
                             {"start", OptionalTime(w.start_ns)},
                             {"end", OptionalTime(w.end_ns)},
                             {"start_ns", OrNull(w.start_ns)},
                             {"end_ns", OrNull(w.end_ns)},
                             {"note", note.empty() ? nlohmann::json() : nlohmann::json(note)}};
    worker.update(ProgressJson(progress.Of(w.index)));
    out["workers"].push_back(std::move(worker));
  }
  out["recovering"] = recovery["recovering"];
  if (!recovery["recovering"].is_null() && attempt) out["attempt"]["state"] = "recovering";
  out["preemptions"] = recovery["preemptions"];
  out["budget"] = recovery["budget"];
  out["time_lost_seconds"] = recovery["time_lost_seconds"];
  out["keeper"] = recovery["keeper"];
  WriteAll(STDOUT_FILENO, out.dump() + "\n");
}

void PrintTable(const JobRecord& job, const std::optional<AttemptRecord>& attempt,
                const std::vector<WorkerRecord>& workers, const Notes& notes,
                const Progress& progress, const std::optional<std::string>& recovering) {
  std::string out = fmt::format("job {} ({})  pod {}", job.id, job.name, job.pod);
  if (const std::vector<std::string> zones = JobZones(job); !zones.empty()) {
    out += fmt::format("  zone {}", fmt::join(zones, ","));
  }
  if (!attempt) {
    WriteAll(STDOUT_FILENO, out + "  no attempt yet\n");
    return;
  }
  out += fmt::format("  attempt {}: {}  started {}", attempt->number,
                     recovering ? *recovering : AttemptStateName(attempt->state),
                     FormatLocalTime(attempt->started_ns));
  if (!attempt->resumed_from.empty()) out += "  resumed from " + attempt->resumed_from;
  if (attempt->ended_ns) {
    out += fmt::format("  took {}", FormatDuration(*attempt->ended_ns - attempt->started_ns));
  }
  out += "\n";
  if (attempt->state == AttemptState::kFailed && !attempt->cause.empty()) {
    out += "cause: " + attempt->cause + "\n";
  }
  // STEP only when some worker printed one: nothing changes for a program that prints none.
  const bool steps = std::any_of(progress.workers.begin(), progress.workers.end(),
                                 [](const auto& p) { return p.second.step.has_value(); });
  const int64_t now_ns = NowUnixNs();
  std::vector<std::vector<std::string>> rows = {
      {"WORKER", "HOST", "STATE", "EXIT", "START", "END"}};
  if (steps) rows[0].push_back("STEP");
  rows[0].push_back("NOTE");
  for (const WorkerRecord& w : workers) {
    rows.push_back({"w" + std::to_string(w.index), w.host, WorkerStateName(w.state), ExitText(w),
                    w.start_ns ? FormatLocalTime(*w.start_ns) : "-",
                    w.end_ns ? FormatLocalTime(*w.end_ns) : "-"});
    if (steps) rows.back().push_back(StepText(progress.Of(w.index), now_ns));
    rows.back().push_back(NoteWithStraggler(w, notes, progress));
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += i + 1 < row.size() ? fmt::format("{:<{}}  ", row[i], widths[i]) : row[i];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  if (progress.hang_report) {
    for (const std::string& line : HangReportLines(*progress.hang_report, job.id)) {
      out += line + "\n";
    }
  }
  WriteAll(STDOUT_FILENO, out);
}

}  // namespace

ExitCode RunStatus(const StatusRequest& request) {
  JobStore store(PodrunHome() / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  Notes notes;
  std::vector<WorkerRecord> workers;
  Progress progress;
  if (attempt) {
    notes = RefreshFromAgents(store, job, attempt->number);
    attempt = store.GetAttempt(job.id, attempt->number);
    workers = store.Workers(job.id, attempt->number);
    progress = ReadProgress(store, job.id, attempt->number);
  }
  if (request.json) {
    nlohmann::json recovery = RecoveryJson(store, PodrunHome(), job);
    recovery["recovering"] = RecoveringJson(store, job.id);
    PrintJson(job, attempt, workers, notes, progress, recovery);
  } else {
    PrintTable(job, attempt, workers, notes, progress, RecoveringText(store, job.id));
    std::string recovery;
    for (const std::string& line : RecoveryLines(store, PodrunHome(), job)) recovery += line + "\n";
    WriteAll(STDOUT_FILENO, recovery);
  }
  return ExitCode::kOk;
}

namespace {

CommandRun AddStatusOptions(CLI::App& app) {
  app.description(
      "Show JOB's latest attempt per worker: host, state (pending, connecting, setup,\n"
      "running, exited, failed, lost, stopped), exit code (or signal), start and end\n"
      "(local time), the last step and how long ago (when the job prints steps), a\n"
      "straggler's note, and the verdict of the hang report kept if the stall watch\n"
      "fired. Without JOB: the latest job.\n"
      "Workers the store shows as not ended are checked with their agents and the\n"
      "answer recorded (the launcher may be gone, e.g. after --detach); while a keeper\n"
      "or an attached launch drives the job, those it is connecting to or has lost are\n"
      "left to it. A worker whose\n"
      "agent cannot be reached keeps its recorded state, with the note 'agent\n"
      "unreachable: ...': podrun does not guess that its process is lost.");
  auto request = std::make_shared<StatusRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--json", request->json,
               "One JSON object: job, attempt (with hang_report when one was kept), workers "
               "(worker, host, state, exit_code, signal, start, end, note, step, step_ns, "
               "steps_per_s, straggler)");
  return [request] { return RunStatus(*request); };
}

}  // namespace

Command StatusCommand() { return {"status", "show a job's state per worker", AddStatusOptions}; }

}  // namespace podrun
