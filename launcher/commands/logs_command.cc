// `podrun logs`: read each selected worker's log from its agent, then print it merged (in time
// order) or, with -f, as it arrives; --fold through a LogFolder.
#include "launcher/commands/logs_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <tuple>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/attempt/log_follower.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/abandoned_start.h"
#include "launcher/connect/job_agents.h"
#include "launcher/output/control_escape.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/line_splitter.h"
#include "launcher/output/log_merge_queue.h"
#include "launcher/output/log_printer.h"
#include "launcher/output/say.h"
#include "launcher/output/ticker_thread.h"
#include "launcher/pod/worker_range.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

// How often progress states that fell due between batches are printed (with -f).
constexpr auto kTickPeriod = std::chrono::milliseconds(100);

// How reading one worker's log ended.
struct LogRead {
  std::optional<ProcessEnd> end;   // the process has ended (and every record was read)
  bool unknown = false;            // the agent never heard of this attempt
  bool cancelled = false;          // on_batch asked to stop
  std::string error;               // the log could not be read to its end
  std::optional<AgentLogGap> gap;  // output the worker could not keep on its disk
};

// The workers to show: -w (pod-wide indexes, each part of the attempt) or all of the attempt.
std::vector<int> SelectWorkers(const LogsRequest& request, const JobRecord& job,
                               const AttemptRecord& attempt) {
  if (request.workers.empty()) return attempt.workers;
  std::vector<int> selected = ParseWorkerRange(request.workers, static_cast<int>(job.hosts.size()));
  for (int w : selected) {
    if (std::find(attempt.workers.begin(), attempt.workers.end(), w) == attempt.workers.end()) {
      throw UsageError(fmt::format(
          "-w {}: worker {} did not take part in attempt {} of job {} "
          "(its workers: {})",
          request.workers, w, attempt.number, job.id, FormatWorkerRange(attempt.workers)));
    }
  }
  return selected;
}

}  // namespace

ExitCode RunLogs(const LogsRequest& request) {
  JobStore store(PodrunHome() / "podrun.db");
  JobRecord job = store.ResolveJob(request.job);
  std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  if (!attempt) throw UsageError(fmt::format("job {} has no attempt yet", job.id));
  std::vector<int> workers = SelectWorkers(request, job, *attempt);

  JobAgents agents(job, workers);
  int unreachable = agents.ReportUnreachable();
  std::vector<int> reachable;  // the workers whose lines are printed (and folded)
  for (const JobAgent& agent : agents.agents()) {
    if (agent.client) reachable.push_back(agent.index);
  }
  LogPrinter printer(reachable, request.fold, request.prefix,
                     LabelledOutput::ShouldColor(STDOUT_FILENO));

  // Which agents know the attempt (one short call each, in parallel).
  std::mutex mutex;  // guards reads while the agents are asked
  std::map<int, LogRead> reads;
  AgentAnswers answers;
  agents.ForEachReachable([&](JobAgent& agent) {
    LogRead read;
    std::optional<AgentJobStatus> status;
    try {
      status = agent.client->Status(job.id, static_cast<uint32_t>(attempt->number));
      read.unknown = !status;
    } catch (const Error& e) {
      read.error = e.what();
    }
    std::lock_guard lock(mutex);
    if (read.error.empty()) answers[agent.index] = status;
    reads[agent.index] = std::move(read);
  });
  // A gang whose start was abandoned (the launcher lost between two workers' Start): the
  // workers still prepared never start; ended now, their logs end at once.
  AbandonedStartWatch abandoned(agents, job.id, static_cast<uint32_t>(attempt->number), answers);
  std::vector<JobAgent*> known;
  for (JobAgent& agent : agents.agents()) {
    auto it = reads.find(agent.index);
    if (it != reads.end() && !it->second.unknown && it->second.error.empty()) {
      known.push_back(&agent);
    } else if (agent.client) {
      printer.Finish(agent.index);  // no log there: --fold must not wait for it
    }
  }
  auto params = [&](const JobAgent& agent) {
    LogFollowParams p;
    p.job_id = job.id;
    p.attempt = static_cast<uint32_t>(attempt->number);
    p.follow = request.follow;
    p.description = agent.description;
    return p;
  };
  auto hooks = [&](JobAgent* agent) {
    LogFollowHooks h{[agent] { return agent->client; },
                     [&agents, agent] { return agents.Reconnect(*agent); },
                     Say,
                     {}};
    // Bulk output over a channel of its own where the link has one (SSH), as launch does.
    h.open_stream = [&agents, &job, &attempt, &request, agent](
                        uint64_t from_seq, AgentLogReader::OnBatch on_batch,
                        AgentLogReader::OnStreamDone on_done) {
      return agents.StartLogStream(*agent, job.id, static_cast<uint32_t>(attempt->number), from_seq,
                                   request.follow, std::move(on_batch), std::move(on_done));
    };
    return h;
  };
  auto record = [&](const JobAgent& agent, const LogFollowResult& result) {
    std::lock_guard lock(mutex);
    LogRead& read = reads[agent.index];
    read.end = result.end;
    read.gap = result.gap;
    read.cancelled = result.cancelled;
    read.error = result.lost;
  };

  if (request.follow) {
    // Every log at once, as it comes, without a thread per worker (FollowLogs).
    TickerThread ticker(kTickPeriod, [&] { printer.Tick(); });
    std::vector<LogFollowJob> jobs;
    for (JobAgent* agent : known) {
      const int index = agent->index;
      jobs.push_back({params(*agent), hooks(agent), [&printer, index](std::vector<LogRecord>&& r) {
                        printer.Add(index, r);
                        return printer.Flush();
                      }});
    }
    FollowLogs(std::move(jobs), [&](size_t i, const LogFollowResult& result) {
      record(*known[i], result);
      printer.Finish(known[i]->index);
      printer.Flush();
      // A worker stopped for want of its start's confirmation: the prepared ones never start.
      if (result.end) abandoned.Ended(known[i]->index, *result.end);
    });
  } else {
    // Merged in time order (each worker's clock corrected by its offset) in bounded batches:
    // each reader thread blocks while its worker has batches waiting; this thread prints.
    std::vector<int> known_indexes;
    std::map<int, int64_t> offsets;
    for (JobAgent* agent : known) {
      known_indexes.push_back(agent->index);
      offsets[agent->index] = agent->clock_offset_ns;
    }
    LogMergeQueue merge(known_indexes, offsets);
    std::thread readers([&] {
      ParallelFor(known.size(), [&](size_t i) {
        JobAgent* agent = known[i];
        LogFollowResult result =
            FollowLog(params(*agent), hooks(agent), [&](std::vector<LogRecord>&& records) {
              return merge.Push(agent->index, std::move(records));
            });
        merge.End(agent->index);
        record(*agent, result);
      });
    });
    merge.Drain(
        [&](int worker, const LogRecord& r) {
          printer.Add(worker, r);
          if (printer.broken()) merge.Cancel();
        },
        [&](int worker) { printer.Finish(worker); });
    printer.Flush();
    readers.join();
  }
  if (printer.broken()) return ExitCode::kOk;  // the reader went away (e.g. `| head`)

  bool failed = false;
  std::map<std::string, std::vector<int>> ends;  // how a process ended -> workers (with -f)
  for (const JobAgent& agent : agents.agents()) {
    auto it = reads.find(agent.index);
    if (it == reads.end()) continue;  // unreachable: reported already
    const LogRead& read = it->second;
    if (read.unknown) {
      Say(fmt::format(
          "{}: its agent has no log of attempt {} (it never started there{})", agent.description,
          attempt->number,
          abandoned.abandoned() ? ": the launcher was lost while starting the gang" : ""));
      failed = true;
    } else if (!read.error.empty()) {
      Say(fmt::format("{}: {}", agent.description, read.error));
      ++unreachable;
    } else if (read.end) {
      failed = failed || StateOfEnd(*read.end) != WorkerState::kExited;
      const bool never_started = abandoned.abandoned() && read.end->never_started;
      if (never_started)
        Say(fmt::format("{}: {}", agent.description, NeverStartedInAbandonedStart()));
      try {  // the agents' word settles what the store may not know (e.g. after -d)
        for (const WorkerRecord& w : store.Workers(job.id, attempt->number)) {
          if (w.index == agent.index && !IsFinal(w.state)) {
            WorkerUpdate update = UpdateFromProcessEnd(*read.end);
            if (never_started) update.error = NeverStartedInAbandonedStart();
            store.UpdateWorker(job.id, attempt->number, w.index, update);
          }
        }
      } catch (const Error& e) {
        Say(fmt::format("warning: job store: {}", e.what()));
      }
    }
    if (read.gap) Say(fmt::format("{}: {}", agent.description, DescribeLogGap(*read.gap)));
    if (request.follow && read.end) ends[DescribeProcessEnd(*read.end)].push_back(agent.index);
  }
  if (!ends.empty()) {
    std::string summary;
    for (const auto& [how, indexes] : ends) {
      summary +=
          fmt::format("{}w{}: {}", summary.empty() ? "" : "; ", FormatWorkerRange(indexes), how);
    }
    Say(fmt::format("job {} attempt {} ended: {}", job.id, attempt->number, summary));
  }
  try {
    const AttemptState state = store.GetAttempt(job.id, attempt->number).state;
    if (abandoned.abandoned() &&
        (state == AttemptState::kStarting || state == AttemptState::kRunning)) {
      store.SetAttemptEnd(job.id, attempt->number, AttemptEnd::kFailure, abandoned.Cause());
    }
    SettleAttemptIfDone(store, job.id, attempt->number);
  } catch (const Error& e) {
    Say(fmt::format("warning: job store: {}", e.what()));
  }
  if (unreachable > 0) return ExitCode::kUnreachable;
  if (request.follow && failed) return ExitCode::kFailed;
  return ExitCode::kOk;
}

namespace {

CommandRun AddLogsOptions(CLI::App& app) {
  app.description(
      "Print the merged log of JOB's latest attempt, from the start, read from the\n"
      "workers' agents (the authoritative copy); works whether or not the launcher\n"
      "still runs. Lines are '[wK] text', stdout lines on stdout, stderr lines on\n"
      "stderr; without -f merged in time order. JOB: an id, a unique prefix of one,\n"
      "or a name (its latest job).\n"
      "Exit: 3 if a worker's agent cannot be reached (the others are printed);\n"
      "with -f, 1 if the process failed or was stopped on a selected worker; else 0.");
  struct Options {
    LogsRequest request;
    bool no_prefix = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("job", o->request.job, "Job id, unique id prefix, or name")->required();
  app.add_flag("-f,--follow", o->request.follow,
               "Keep printing as lines come until every selected worker's process has ended");
  app.add_option("-w,--workers", o->request.workers, "Only these workers, e.g. 0,2-3 (pod-wide)");
  app.add_flag("--fold", o->request.fold,
               "Print a line that all selected workers printed alike (at the same line) once, "
               "as '[w0-3] text'");
  app.add_flag("--no-prefix", o->no_prefix, "Print the text alone, without '[wK] '");
  app.footer("Example: podrun logs bert-base -f -w 0-3 --fold");
  return [o] {
    o->request.prefix = !o->no_prefix;
    return RunLogs(o->request);
  };
}

}  // namespace

Command LogsCommand() {
  return {"logs", "print (-f: follow) the merged log of a job", AddLogsOptions};
}

}  // namespace podrun
