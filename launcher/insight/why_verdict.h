// The why report (docs/reference.md, "podrun why"): what every worker's processes were doing
// when asked, and the verdict, the suspects first: the workers at the lowest step (behind the
// others), then those whose state differs from the rest (a different wait, running while the
// others wait, unreachable, ended), then the longest silent. Pure: made from what GatherWhy
// brought back and the workers' steps, so tests give it any picture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/store/run_records.h"

namespace podrun {

// One worker as gathered.
struct WorkerWhy {
  int worker = 0;
  std::string description;               // "w3 (root@10.0.0.5:22)"
  std::optional<AgentWhyReport> report;  // nullopt: not asked, unreachable, or no such attempt
  std::string error;                     // why there is no report
  bool unreachable = false;              // its agent could not be asked (not: had no record)
  WorkerProgress progress;               // its step, as the launcher saw it
  int64_t clock_offset_ns = 0;           // its clock minus the launcher's
};

// One line of the verdict.
struct WhyLine {
  int worker = 0;
  bool suspect = false;
  std::string text;  // "w2: suspect: step 1512 (others 1513), python3 pid 4242 in ..."
};

struct WhyReport {
  std::string job_id;
  int attempt = 0;
  int64_t made_ns = 0;  // the launcher's clock
  double gather_seconds = 0;
  std::vector<WorkerWhy> workers;
  std::vector<WhyLine> verdict;  // the suspects first, then every other worker
};

// Orders the workers and writes a line for each (report.verdict), at the launcher's `now_ns`.
void MakeVerdict(WhyReport& report, int64_t now_ns);

// The process of a worker that the verdict speaks of: its busiest non-shell process (the most
// threads, then the most CPU), else the leader; null when there is none.
const AgentProcessReport* MainProcess(const AgentWhyReport& report);

// Drops the stacks of every worker after the first `workers` of the verdict (each such process
// says so in its stack_error): what is kept with an attempt stays bounded on a large pod (at most
// `workers` x 16 processes x 16 KiB), the suspects' stacks first.
void KeepStacksOf(WhyReport& report, size_t workers);

// "7m12s", "42s", "3h05m".
std::string ShortDuration(double seconds);

// The report as printed: the verdict, then per worker its processes, stacks and notes, for the
// first `detailed` workers of the verdict. `stack_lines`: at most this many lines of each stack
// (0: all).
std::string WhyText(const WhyReport& report, size_t stack_lines = 40,
                    size_t detailed = static_cast<size_t>(-1));
// The report for scripts (`podrun why --json`, and kept with an attempt).
nlohmann::json WhyJson(const WhyReport& report);

}  // namespace podrun
