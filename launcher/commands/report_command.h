// `podrun report [JOB] [--html FILE] [--json]`: where a run's time went (docs/reference.md): per
// attempt and worker the phases, first step, steps and end; the run's goodput and the time lost
// by cause; as text, JSON, or a self-contained HTML page. Reads the job store only.
#pragma once

#include <string>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"

namespace podrun {

struct ReportRequest {
  std::string job;            // id, unique prefix or name; empty: the latest job
  std::string html;           // write the page here; empty: none
  bool json = false;          // one JSON object on stdout instead of the text
  bool every_worker = false;  // the text: one line per worker however many
};

// Prints the report (or writes the page) and returns 0. Throws Error(kUsage) for an unknown job
// or when there is none, Error(kFailed) when the page cannot be written.
ExitCode RunReport(const ReportRequest& request);

// `podrun report` in the command table (command.h).
Command ReportCommand();

}  // namespace podrun
