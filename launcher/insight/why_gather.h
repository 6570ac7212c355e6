// GatherWhy: asks every worker's agent what the job's processes are doing (the Why RPC), all at
// once, and makes the report's verdict (why_verdict.h). Used by `podrun why` and by the gang
// when its stall watch fires. Blocks for about the request's CPU window plus its stack time, times
// the rounds a large pod needs: at most kWhyThreads workers are asked at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/agent_link/agent_client.h"
#include "launcher/insight/why_verdict.h"
#include "launcher/store/run_records.h"

namespace podrun {

// How many workers are asked at once (threads, each blocked on one worker's Why).
inline constexpr size_t kWhyThreads = 64;

// One worker to ask.
struct WhyTarget {
  int worker = 0;
  std::string description;  // "w3 (root@10.0.0.5:22)"
  // Its agent's client (null, or throwing: the worker is unreachable, `error` says why).
  std::function<std::shared_ptr<AgentClient>()> client;
  std::string error;  // why there is no client, when known beforehand
  WorkerProgress progress;
  int64_t clock_offset_ns = 0;
};

// Asks every target, kWhyThreads at a time, and returns the report with its verdict.
WhyReport GatherWhy(const std::string& job_id, int attempt, const std::vector<WhyTarget>& targets,
                    const AgentWhyRequest& request);

}  // namespace podrun
