// `podrun report`: a run's timeline from the store (insight/run_timeline.h), as text, JSON or an
// HTML page.
#include "launcher/commands/report_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "launcher/base/atomic_file.h"
#include "launcher/connect/job_agents.h"
#include "launcher/insight/report_html.h"
#include "launcher/insight/report_json.h"
#include "launcher/insight/report_text.h"
#include "launcher/insight/run_timeline.h"
#include "launcher/insight/step_cache.h"
#include "launcher/output/say.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

// While the latest attempt runs, its steps are read from the workers first (the store's record
// is their cache): a report made with no keeper running is as current as one made beside it.
void RefreshRunningSteps(JobStore& store, const JobRecord& job) {
  const std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  if (!attempt || attempt->state != AttemptState::kRunning) return;
  std::vector<int> indexes;
  for (const WorkerRecord& w : store.Workers(job.id, attempt->number)) {
    if (!IsFinal(w.state)) indexes.push_back(w.index);
  }
  if (indexes.empty()) return;
  try {
    JobAgents agents(job, indexes);
    RefreshSteps(store, job, attempt->number, agents);
  } catch (const Error& e) {
    Say(fmt::format("steps as last recorded: the workers could not be asked ({})", e.what()));
  }
}

}  // namespace

ExitCode RunReport(const ReportRequest& request) {
  JobStore store(PodrunHome() / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  RefreshRunningSteps(store, job);
  const RunTimeline run = LoadRunTimeline(store, job);
  const RunAccount account = AccountRun(run);
  if (!request.html.empty()) {
    WriteFileAtomically(request.html, FormatReportHtml(run, account));
    Say(fmt::format("report of job {} written to {}", job.id, request.html));
  }
  if (request.json) {
    WriteAll(
        STDOUT_FILENO,
        ReportJson(run, account).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
            "\n");
  } else if (request.html.empty()) {
    WriteAll(STDOUT_FILENO, FormatReportText(run, account, {.every_worker = request.every_worker}));
  }
  return ExitCode::kOk;
}

namespace {

CommandRun AddReportOptions(CLI::App& app) {
  app.description(
      "Where JOB's time went (without JOB: the latest job): per attempt and worker, the\n"
      "phases (agents, sync, mounts, setup, start), the first step, the steps and how it\n"
      "ended; the recoveries between attempts; the run's goodput (time making steps over\n"
      "the wall time since the first launch) and the time lost by cause (preemption,\n"
      "hang, failure, stop). More than 16 workers are summarised per attempt (median and\n"
      "slowest per phase, ends by worker ranges) unless --all-workers.");
  auto request = std::make_shared<ReportRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_option("--html", request->html,
                 "Write the report as one self-contained HTML page (a timeline, a row per "
                 "worker) to FILE")
      ->type_name("FILE");
  app.add_flag("--json", request->json,
               "One JSON object: job, goodput, wall_s, steps_s, lost_s, startup_s, attempts "
               "(with their workers' phases, steps and ends), recoveries");
  app.add_flag("--all-workers", request->every_worker,
               "One line per worker however many there are");
  return [request] { return RunReport(*request); };
}

}  // namespace

Command ReportCommand() {
  return {"report", "where a job's time went: phases, goodput, time lost", AddReportOptions};
}

}  // namespace podrun
