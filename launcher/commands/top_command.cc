// `podrun top`: Top RPCs to the job's agents every second, with the workers' steps from the job
// store, shown as output/top_table.h's rows.
#include "launcher/commands/top_command.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/job_agents.h"
#include "launcher/insight/step_cache.h"
#include "launcher/insight/top_sample.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/output/top_table.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/recovery_report.h"
#include "launcher/store/job_store.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/run_records.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

constexpr auto kRefreshInterval = std::chrono::seconds(1);
// --once: the two samples a rate needs are this far apart.
constexpr auto kOnceSampleInterval = std::chrono::milliseconds(500);

// Samples every worker of one attempt through its agent, remembering each worker's previous
// sample for the rates; each sample carries the worker's step record (read there by its
// supervisor), which refreshes the store's record (a cache: insight/step_cache.h) before the
// rows take their steps from it (one query a sample), with the straggler flag the gang's driver
// set. Workers whose agent is not asked (the attempt never started) keep the store's record.
// Used from one thread.
class TopSampler {
 public:
  TopSampler(JobStore& store, const JobRecord& job, int attempt, std::vector<WorkerRecord> workers,
             bool start_failed)
      : store_(store),
        job_id_(job.id),
        attempt_(static_cast<uint32_t>(attempt)),
        straggler_after_(StragglerAfter(job)),
        workers_(std::move(workers)) {
    // Nobody follows the job: its stragglers are worked out from the workers' step records.
    if (!DriverHolder(PodrunHome(), job.id) &&
        ViewKeeper(store, PodrunHome(), job).state != KeeperState::kRunning) {
      driverless_ = StragglerRuleOf(job);
    }
    if (start_failed) {
      not_asked_ = "not started: the attempt could not start on every worker";
      return;
    }
    std::vector<int> indexes;
    for (const WorkerRecord& w : workers_) indexes.push_back(w.index);
    try {
      agents_ = std::make_unique<JobAgents>(job, indexes);
    } catch (const Error& e) {
      not_reached_ = e.what();
    }
  }

  // The rows now, sorted. Sets `unreachable` to the number of workers whose agent could not be
  // asked.
  std::vector<TopRow> Sample(int* unreachable) {
    std::vector<TopRow> rows(workers_.size());
    *unreachable = 0;
    if (!agents_) {
      for (size_t i = 0; i < workers_.size(); ++i) {
        rows[i] = not_asked_.empty() ? UnreachableRow(workers_[i], not_reached_)
                                     : StoreRow(workers_[i], not_asked_);
        *unreachable += not_asked_.empty() ? 1 : 0;
      }
      return Sorted(std::move(rows));
    }
    std::vector<std::optional<AgentTopSample>> samples(workers_.size());
    std::vector<std::string> errors(workers_.size());
    std::vector<JobAgent>& agents = agents_->agents();  // in the order of workers_
    ParallelFor(agents.size(), [&](size_t i) {
      if (!agents[i].client) {
        errors[i] = agents[i].error;
        return;
      }
      try {
        samples[i] = agents[i].client->Top(job_id_, attempt_);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
    std::vector<FetchedSteps> steps;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (samples[i] && samples[i]->steps) {
        steps.push_back({workers_[i].index, *samples[i]->steps, agents[i].clock_offset_ns});
      }
    }
    try {
      CacheSteps(store_, job_id_, static_cast<int>(attempt_), steps, NowUnixNs(), straggler_after_,
                 driverless_);
    } catch (const Error&) {
      // The store is busy or read-only: the rows take what it has.
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      const WorkerRecord& w = workers_[i];
      if (!errors[i].empty()) {
        rows[i] = UnreachableRow(w, errors[i]);
        ++*unreachable;
        continue;
      }
      auto before = previous_.find(w.index);
      rows[i] = TopRowOf(w, samples[i], before == previous_.end() ? std::nullopt : before->second);
      previous_[w.index] = samples[i];
    }
    return Sorted(std::move(rows));
  }

 private:
  // The rows with the steps the store has now (those of the last read if it cannot be read:
  // the view goes on), sorted.
  std::vector<TopRow> Sorted(std::vector<TopRow> rows) {
    try {
      progress_ = RunRecords(store_).Progress(job_id_, static_cast<int>(attempt_));
    } catch (const Error&) {
    }
    AddProgress(rows, progress_);
    SortTopRows(rows);
    return rows;
  }

  JobStore& store_;
  std::vector<WorkerProgress> progress_;
  std::string job_id_;
  uint32_t attempt_;
  std::chrono::seconds straggler_after_;
  std::optional<StragglerRule> driverless_;  // set: no driver follows the job
  std::vector<WorkerRecord> workers_;
  std::string not_asked_;    // set: the agents are not asked, for this reason
  std::string not_reached_;  // set: no agent could be reached, for this reason
  std::unique_ptr<JobAgents> agents_;
  std::map<int, std::optional<AgentTopSample>> previous_;  // by worker index
};

// The line above the table: which job, and how its workers are doing.
std::string Heading(const JobRecord& job, int attempt, const std::vector<TopRow>& rows) {
  std::map<std::string, int> states;
  for (const TopRow& row : rows) ++states[row.state];
  std::string counts;
  for (const auto& [state, n] : states) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
  }
  return fmt::format("job {} ({})  attempt {}  {}  {}\n", job.id, job.name, attempt, counts,
                     FormatLocalTime(NowUnixNs()));
}

std::string JsonLines(const std::vector<TopRow>& rows) {
  std::string out;
  for (const TopRow& row : rows) out += TopRowJson(row) + "\n";
  return out;
}

// The terminal's columns and lines; 0 where unknown (no limit then).
std::pair<size_t, size_t> TerminalSize() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return {0, 0};
  return {ws.ws_col, ws.ws_row};
}

// The terminal's alternate screen with the cursor hidden, for the object's lifetime.
class FullScreen {
 public:
  FullScreen() { WriteAll(STDOUT_FILENO, "\x1b[?1049h\x1b[?25l"); }
  ~FullScreen() { WriteAll(STDOUT_FILENO, "\x1b[?25h\x1b[?1049l"); }
  FullScreen(const FullScreen&) = delete;
  FullScreen& operator=(const FullScreen&) = delete;

  // Redraws the screen with `frame` from its top left: each line cleared to its end, the rest
  // of the screen below the last. No newline after the last line: a full screen must not scroll.
  static bool Draw(std::string_view frame) {
    if (!frame.empty() && frame.back() == '\n') frame.remove_suffix(1);
    std::string out = "\x1b[H";
    size_t begin = 0;
    for (size_t nl; (nl = frame.find('\n', begin)) != std::string_view::npos; begin = nl + 1) {
      out.append(frame.substr(begin, nl - begin)).append("\x1b[K\r\n");
    }
    out.append(frame.substr(begin)).append("\x1b[K\x1b[J");
    return WriteAll(STDOUT_FILENO, out);
  }
};

// Waits until `deadline` or an interrupt; true if interrupted.
class Interrupts {
 public:
  Interrupts()
      : watcher_([this] {
          std::lock_guard lock(mu_);
          interrupted_ = true;
          wake_.notify_all();
        }) {}
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return wake_.wait_until(lock, deadline, [this] { return interrupted_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable wake_;
  bool interrupted_ = false;
  InterruptWatcher watcher_;  // last: its thread uses the members above
};

}  // namespace

ExitCode RunTop(const TopRequest& request) {
  // Before any thread: SIGINT is then taken by the watcher's thread alone.
  Interrupts interrupts;
  JobStore store(PodrunHome() / "podrun.db");
  const JobRecord job = store.ResolveJobOrLatest(request.job);
  const std::optional<AttemptRecord> attempt = store.LatestAttempt(job.id);
  if (!attempt) {
    Say(fmt::format("job {} ({}) has no attempt yet", job.id, job.name));
    return ExitCode::kOk;
  }
  TopSampler sampler(store, job, attempt->number, store.Workers(job.id, attempt->number),
                     attempt->state == AttemptState::kStartFailed);
  int unreachable = 0;
  if (request.once) {
    sampler.Sample(&unreachable);
    if (interrupts.WaitUntil(std::chrono::steady_clock::now() + kOnceSampleInterval)) {
      return ExitCode::kInterrupted;
    }
    const std::vector<TopRow> rows = sampler.Sample(&unreachable);
    WriteAll(STDOUT_FILENO, request.json
                                ? JsonLines(rows)
                                : Heading(job, attempt->number, rows) + FormatTopTable(rows));
    return unreachable > 0 ? ExitCode::kUnreachable : ExitCode::kOk;
  }
  const bool terminal = ::isatty(STDOUT_FILENO) == 1 && !request.json;
  std::optional<FullScreen> screen;
  if (terminal) screen.emplace();
  auto next = std::chrono::steady_clock::now();
  while (true) {
    const std::vector<TopRow> rows = sampler.Sample(&unreachable);
    bool written;
    if (request.json) {
      written = WriteAll(STDOUT_FILENO, JsonLines(rows));
    } else if (terminal) {
      const auto [columns, lines] = TerminalSize();
      // The heading, the table's header and a "... more" line take three lines. The last
      // column stays free: a line that fills it would leave the cursor waiting to wrap.
      const size_t max_rows = lines == 0 ? 0 : lines > 4 ? lines - 3 : 1;
      const size_t width = columns > 1 ? columns - 1 : 0;
      std::string heading = Heading(job, attempt->number, rows);
      if (width > 0 && heading.size() > width + 1) heading = heading.substr(0, width) + "\n";
      written = FullScreen::Draw(heading + FormatTopTable(rows, width, max_rows));
    } else {
      written = WriteAll(STDOUT_FILENO,
                         Heading(job, attempt->number, rows) + FormatTopTable(rows) + "\n");
    }
    if (!written) return ExitCode::kOk;  // the reader went away (a closed pipe)
    next += kRefreshInterval;
    if (interrupts.WaitUntil(next)) return ExitCode::kOk;  // Ctrl-C ends the view
  }
}

namespace {

CommandRun AddTopOptions(CLI::App& app) {
  app.description(
      "A live view of JOB's latest attempt, a row per worker, refreshed every second:\n"
      "state, pid, CPU (% of one CPU, the job's whole process tree), resident memory,\n"
      "processes, accelerator devices held open, output rate, seconds since the last\n"
      "output, the training step and steps per second (when the job prints steps; see\n"
      "the spec's progress:), and the last line. Failed, lost and unreachable workers\n"
      "come first, then stragglers, then the workers silent longest. On a terminal the\n"
      "table is redrawn in place until Ctrl-C (exit 0); into a file or pipe, a plain\n"
      "snapshot is printed every second.\n"
      "Without JOB: the latest job. A worker whose agent cannot be asked gets a row in\n"
      "state 'unreachable' with the error.\n"
      "Exit with --once: 3 if a worker was unreachable, else 0.");
  auto request = std::make_shared<TopRequest>();
  app.add_option("job", request->job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--once", request->once,
               "Print one snapshot and exit (sampled twice, half a second apart, for the rates)");
  app.add_flag("--json", request->json,
               "One JSON object per worker and line: worker, host, state, pid, cpu_percent, "
               "rss_bytes, processes, accelerators, output_bytes_per_second, silent_seconds, "
               "last_line, error, step, step_ns, steps_per_s, straggler, ...");
  app.footer("Example: podrun top bert-base --once");
  return [request] { return RunTop(*request); };
}

}  // namespace

Command TopCommand() {
  return {"top", "live per-worker view of a job: CPU, memory, output, silence", AddTopOptions};
}

}  // namespace podrun
