// The launcher's record of the workers' steps is a cache of the workers' own (docs/design.md
// decision 19): each worker's supervisor reads the steps from the output and keeps the record in
// the job's directory there, so `top`, `status`, `why` and `report` can show current steps from
// the workers with no keeper running. These write what the workers said into the job store's
// record of the attempt (RunRecords: step, when, rate, samples). The straggler flag stays as the
// gang's driver last set it; with no driver (a `launch -d` nobody follows), it is computed from
// the workers' own step records: a worker whose rate over the last straggler_seconds is below
// straggler_ratio times the gang's median rate over the same window is one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/connect/job_agents.h"
#include "launcher/insight/step_tracker.h"
#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"

namespace podrun {

// One worker's step record as its agent gave it.
struct FetchedSteps {
  int worker = 0;
  AgentSteps steps;
  int64_t clock_offset_ns = 0;  // the worker's clock minus the launcher's
};

// Writes `fetched` into the store's record of `attempt` of `job_id`, the rate taken at `now_ns`
// (the launcher's clock). `straggler_after`: the spec's straggler_seconds (the rate's window).
// `driverless`: the spec's straggler rule when no driver follows the job: the flags are computed
// from `fetched` (StragglersOf) instead of kept. Throws the store's Error.
void CacheSteps(JobStore& store, const std::string& job_id, int attempt,
                const std::vector<FetchedSteps>& fetched, int64_t now_ns,
                std::chrono::seconds straggler_after,
                const std::optional<StragglerRule>& driverless = std::nullopt);

// The straggler verdict of each worker of `fetched` whose record covers the rule's window ending
// at `now_ns` (the launcher's clock): a note when it is one, nullopt when it is not. Workers
// whose record is shorter than the window are left out (nothing known).
std::map<int, std::optional<StragglerNote>> StragglersOf(const std::vector<FetchedSteps>& fetched,
                                                         int64_t now_ns, const StragglerRule& rule);

// The job's straggler rule, from its stored spec (the defaults if it cannot be read any more).
StragglerRule StragglerRuleOf(const JobRecord& job);

// The job's straggler_seconds, from its stored spec (120 s if that cannot be read any more).
std::chrono::seconds StragglerAfter(const JobRecord& job);

// Asks every reachable agent of `agents` for its step record (at once) and caches what they say.
// Nothing is said of an agent that cannot answer: the store's record stands for it.
void RefreshSteps(JobStore& store, const JobRecord& job, int attempt, JobAgents& agents);

}  // namespace podrun
