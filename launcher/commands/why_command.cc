// `podrun why`: the job's agents asked at once, the verdict printed.
#include "launcher/commands/why_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "launcher/connect/job_agents.h"
#include "launcher/insight/step_cache.h"
#include "launcher/insight/why_gather.h"
#include "launcher/output/say.h"
#include "launcher/spec/spec.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/run_records.h"
#include "proto/write_all.h"

namespace podrun {

ExitCode RunWhy(const WhyCommandRequest& request) {
  JobStore store(PodrunHome() / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  const std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  if (!attempt) {
    Say(fmt::format("job {} ({}) has no attempt yet", job.id, job.name));
    return ExitCode::kOk;
  }
  if (attempt->state != AttemptState::kRunning) {
    Say(
        fmt::format("job {} attempt {} is not running ({}): its processes are gone; its hang "
                    "report, if one was made, is in podrun status {}",
                    job.id, attempt->number, AttemptStateName(attempt->state), job.id));
  }
  // The spec's stacks: signal (re-read from the stored spec text).
  AgentWhyRequest why{.signal = 0, .stacks = request.stacks};
  try {
    why.signal = ParseRecordedSpec(job.spec_text, job.spec_path).stacks_signal;
  } catch (const Error&) {
    // A spec this podrun cannot read any more: no signal.
  }
  std::vector<int> indexes;
  for (const WorkerRecord& w : store.Workers(job.id, attempt->number)) indexes.push_back(w.index);
  JobAgents agents(job, indexes);
  // The steps as the workers read them now (the store's record is their cache).
  RefreshSteps(store, job, attempt->number, agents);
  const std::vector<WorkerProgress> progress = RunRecords(store).Progress(job.id, attempt->number);
  std::vector<WhyTarget> targets;
  for (JobAgent& a : agents.agents()) {
    WhyTarget t;
    t.worker = a.index;
    t.description = a.description;
    t.client = [client = a.client] { return client; };
    t.error = a.error;
    t.progress.worker = a.index;
    t.clock_offset_ns = a.clock_offset_ns;
    for (const WorkerProgress& p : progress) {
      if (p.worker == a.index) t.progress = p;
    }
    targets.push_back(std::move(t));
  }
  const WhyReport report = GatherWhy(job.id, attempt->number, targets, why);
  const bool written = WriteAll(
      STDOUT_FILENO,
      request.json
          ? WhyJson(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"
          : WhyText(report));
  if (!written) return ExitCode::kOk;  // the reader went away
  for (const WorkerWhy& w : report.workers) {
    if (w.unreachable) return ExitCode::kUnreachable;
  }
  return ExitCode::kOk;
}

namespace {

CommandRun AddWhyOptions(CLI::App& app) {
  app.description(
      "What each worker of JOB's latest attempt is doing now, asked of every worker at once:\n"
      "per process its state (running, sleeping, disk wait, stopped), kernel wait channel,\n"
      "system call, CPU over the last second, threads, and a stack where the worker has\n"
      "py-spy (Python) or gdb (native). With the spec's `stacks: {signal: SIGUSR1}` that signal\n"
      "is sent first to the processes that catch it (faulthandler.register): their dump is in\n"
      "the log. Then the verdict, the suspects first: the workers behind the others' step,\n"
      "those whose state differs from the rest, then the longest silent. The same report is\n"
      "made by itself when the stall watch (stall_seconds) fires, and kept with the attempt.\n"
      "Without JOB: the latest job. Exit: 3 if a worker could not be asked, else 0.");
  auto request = std::make_shared<WhyCommandRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--json", request->json,
               "The report as one JSON object: verdict [{worker, suspect, line}], workers "
               "[{worker, host, step, state, processes [{pid, state, wchan, syscall, "
               "cpu_percent, threads, stack, ...}]}]");
  auto no_stacks = std::make_shared<bool>(false);
  app.add_flag("--no-stacks", *no_stacks, "Processes only: no py-spy or gdb");
  app.footer("Example: podrun why bert-base");
  return [request, no_stacks] {
    request->stacks = !*no_stacks;
    return RunWhy(*request);
  };
}

}  // namespace

Command WhyCommand() {
  return {"why", "what each worker of a running job is doing now, the suspects first",
          AddWhyOptions};
}

}  // namespace podrun
