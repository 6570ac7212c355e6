// `podrun ls`: JobStore::ListJobs as an aligned table or JSON.
#include "launcher/commands/ls_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launcher/connect/job_pod.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/recovery/recovery_report.h"
#include "launcher/recovery/restarts.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

// The latest attempt's state, or "recovering" while podrun heals the job between attempts.
std::string StateText(JobStore& store, const JobSummary& job) {
  if (RecoveryRecords(store).Recovering(job.id)) return "recovering";
  return job.state ? AttemptStateName(*job.state) : "-";
}

// Finished: how long it ran; still going: how long so far.
std::optional<int64_t> DurationNs(const JobSummary& job) {
  if (!job.started_ns) return std::nullopt;
  return job.ended_ns.value_or(NowUnixNs()) - *job.started_ns;
}

void PrintTable(JobStore& store, const std::vector<JobSummary>& jobs) {
  // STEP only when some job prints steps: nothing changes for jobs that do not.
  const bool steps =
      std::any_of(jobs.begin(), jobs.end(), [](const JobSummary& j) { return j.step; });
  // ZONE only when some job's slices were discovered (--tpu, --mig): where they live now.
  std::vector<std::string> zones;
  for (const JobSummary& job : jobs)
    zones.push_back(fmt::format("{}", fmt::join(JobZones(store.GetJob(job.id)), ",")));
  const bool zoned =
      std::any_of(zones.begin(), zones.end(), [](const auto& z) { return !z.empty(); });
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "POD", "STATE", "ATTEMPTS", "STARTED", "DURATION"}};
  if (zoned) rows[0].insert(rows[0].begin() + 3, "ZONE");
  if (steps) rows[0].push_back("STEP");
  rows[0].push_back("RESTARTS");
  rows[0].push_back("PREEMPTED");
  for (const JobSummary& job : jobs) {
    std::optional<int64_t> duration = DurationNs(job);
    rows.push_back({job.id, job.name, job.pod, StateText(store, job), std::to_string(job.attempts),
                    FormatLocalTime(job.started_ns.value_or(job.created_ns)),
                    duration ? FormatDuration(*duration) + (job.ended_ns ? "" : "+") : "-"});
    if (zoned) {
      const std::string& zone = zones[rows.size() - 2];
      rows.back().insert(rows.back().begin() + 3, zone.empty() ? "-" : zone);
    }
    if (steps) rows.back().push_back(job.step ? std::to_string(*job.step) : "-");
    rows.back().push_back(RestartsCell(store, job.id));
    rows.back().push_back(PreemptionsCell(store, job.id));
  }
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += i + 1 < row.size() ? fmt::format("{:<{}}  ", row[i], widths[i]) : row[i];
    }
    out += line + "\n";
  }
  WriteAll(STDOUT_FILENO, out);
}

void PrintJson(JobStore& store, const std::vector<JobSummary>& jobs) {
  nlohmann::json out = nlohmann::json::array();
  for (const JobSummary& job : jobs) {
    std::optional<int64_t> duration = DurationNs(job);
    const std::vector<PreemptionRecord> preemptions = RecoveryRecords(store).Preemptions(job.id);
    double lost = 0;
    for (const PreemptionRecord& p : preemptions) {
      lost += static_cast<double>(TimeLostToPreemption(store, job.id, p).value_or(0)) / 1e9;
    }
    out.push_back({
        {"id", job.id},
        {"name", job.name},
        {"pod", job.pod},
        {"zones", JobZones(store.GetJob(job.id))},
        {"state", job.state ? nlohmann::json(StateText(store, job)) : nlohmann::json()},
        {"recovering", RecoveringJson(store, job.id)},
        {"attempts", job.attempts},
        {"created", FormatRfc3339(job.created_ns)},
        {"started",
         job.started_ns ? nlohmann::json(FormatRfc3339(*job.started_ns)) : nlohmann::json()},
        {"ended", job.ended_ns ? nlohmann::json(FormatRfc3339(*job.ended_ns)) : nlohmann::json()},
        {"duration_seconds",
         duration ? nlohmann::json(static_cast<double>(*duration) / 1e9) : nlohmann::json()},
        {"preemptions", preemptions.size()},
        {"budget", ViewBudget(store, store.GetJob(job.id)).json},
        {"time_lost_seconds", lost},
        {"step", job.step ? nlohmann::json(*job.step) : nlohmann::json()},
    });
  }
  WriteAll(STDOUT_FILENO, out.dump() + "\n");
}

}  // namespace

ExitCode RunLs(const LsRequest& request) {
  JobStore store(PodrunHome() / "podrun.db");
  std::vector<JobSummary> jobs = store.ListJobs(request.limit);
  if (request.json) {
    PrintJson(store, jobs);
  } else if (jobs.empty()) {
    Say("no jobs yet");
  } else {
    PrintTable(store, jobs);
  }
  return ExitCode::kOk;
}

namespace {

CommandRun AddLsOptions(CLI::App& app) {
  app.description(
      "List the jobs, newest first: id, name, pod, state (of the latest attempt),\n"
      "attempts, started, duration ('+': still running, as far as the store knows;\n"
      "'podrun status JOB' asks the workers), the step every worker of the latest\n"
      "attempt has reached (a STEP column when some job prints steps), preemptions.");
  auto request = std::make_shared<LsRequest>();
  app.add_flag("--json", request->json, "One JSON array of job objects");
  app.add_option("-n,--limit", request->limit, "At most this many jobs");
  return [request] { return RunLs(*request); };
}

}  // namespace

Command LsCommand() { return {"ls", "list jobs, newest first", AddLsOptions}; }

}  // namespace podrun
