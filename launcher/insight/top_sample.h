// `podrun top`'s arithmetic: the row a worker's Top sample makes (output/top_table.h), with the
// CPU and output rates between two samples of the same worker, how long it has been silent, and
// its step as the job store records it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/output/top_table.h"
#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"

namespace podrun {

// Percent of one CPU the job used between `before` and `now`, two samples of one worker's job
// (two busy CPUs: 200). nullopt unless both were taken while the same process ran and its
// monotonic clock advanced between them. Less CPU time than before (a process that left the
// job's tree took its time along) counts as none.
std::optional<double> CpuPercent(const AgentTopSample& before, const AgentTopSample& now);

// Output bytes per second between two samples, under the same conditions as CpuPercent.
std::optional<double> OutputRate(const AgentTopSample& before, const AgentTopSample& now);

// Seconds since the job's last output (or its start, before any), by the worker's own clock;
// nullopt unless the job runs.
std::optional<double> SilentSeconds(const AgentTopSample& sample);

// The row of `worker` (the store's record) from its agent's latest sample (nullopt: the agent
// has no record of the attempt: the store's state, noted) and its previous one, if any (for the
// rates).
TopRow TopRowOf(const WorkerRecord& worker, const std::optional<AgentTopSample>& sample,
                const std::optional<AgentTopSample>& before);

// The row of a worker whose agent could not be asked: state "unreachable", `error` as its note.
TopRow UnreachableRow(const WorkerRecord& worker, const std::string& error);

// The row of a worker as the store records it, with `note` (its agent was not asked).
TopRow StoreRow(const WorkerRecord& worker, const std::string& note);

// Gives each row its worker's step, rate and straggler note from `progress` (RunRecords::Progress
// of the attempt); rows of workers it does not name are left as they are.
void AddProgress(std::vector<TopRow>& rows, const std::vector<WorkerProgress>& progress);

}  // namespace podrun
