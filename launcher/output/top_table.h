// `podrun top`'s rows: one per worker, in the order that matters (failed first, then stragglers,
// then the workers silent longest), as a table for people or as JSON objects for scripts. Pure:
// no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podrun {

// One worker of a job as `podrun top` shows it. Unset fields are unknown or do not apply (usage
// of a process that is not running, a rate before the second sample).
struct TopRow {
  int worker = 0;    // pod-wide index
  std::string host;  // as the job's record has it
  // A worker state name (status's), or "unreachable" when its agent could not be asked.
  std::string state;
  bool failed = false;  // failed, lost or unreachable: shown first
  std::optional<int> pid;
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::optional<double> cpu_percent;  // of one CPU: two busy CPUs are 200
  std::optional<double> cpu_seconds;  // so far
  std::optional<uint64_t> rss_bytes;
  std::optional<uint32_t> processes;
  std::vector<std::string> accelerators;  // devices held open, e.g. /dev/accel0
  std::optional<uint64_t> output_bytes;   // so far
  std::optional<double> output_bytes_per_second;
  std::optional<double> silent_seconds;  // since the last output (or the start), while it runs
  std::string last_line;                 // as printed (may hold control characters)
  // Its training step as the job store last recorded it (the spec's `progress:`), when seen.
  std::optional<int64_t> step;
  std::optional<int64_t> step_ns;     // when it printed it (the launcher's clock)
  std::optional<double> steps_per_s;  // its recent rate
  bool straggler = false;             // flagged as a straggler ...
  std::string straggler_note;         // ... and why ("0.41 steps/s vs median 0.93")
  std::string note;                   // why it is unreachable, or what else is worth saying
};

// Orders rows: failed ones first (by worker), then stragglers (by worker), then by whole seconds
// of silence, longest first, then those without silence (not running); ties by worker. Whole
// seconds keep workers that print all the time from swapping places at every refresh.
void SortTopRows(std::vector<TopRow>& rows);

// The table: a header line and a line per row. STEP and STEPS/S columns only when some row has
// a step; a straggler's note starts its last column. `width` > 0: each line is cut to that many
// columns (the last line column gives way first); 0: nothing is cut. `max_rows` > 0: at most
// that many rows, then "... N more workers". Control characters in a last line are removed
// (escape sequences) or shown as '?'.
std::string FormatTopTable(const std::vector<TopRow>& rows, size_t width = 0, size_t max_rows = 0);

// One JSON object on one line (no newline): worker, host, state, pid, exit_code, signal,
// cpu_percent, cpu_seconds, rss_bytes, processes, accelerators, output_bytes,
// output_bytes_per_second, silent_seconds, last_line, error (the note of an unreachable
// worker), note, step, step_ns, steps_per_s, straggler. Unknown values are null; invalid UTF-8
// is replaced.
std::string TopRowJson(const TopRow& row);

// A step rate as the table shows it: "0.93", "12.4", "150".
std::string FormatStepRate(double steps_per_s);

// Sizes as the table shows them: "512B", "3.1K", "12M", "1.5G" (powers of 1024).
std::string FormatBytes(double bytes);

// `text` for one table cell: escape sequences removed, other control characters shown as '?',
// tabs as spaces.
std::string CellText(std::string_view text);

}  // namespace podrun
