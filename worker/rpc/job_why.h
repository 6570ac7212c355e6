// The agent's answer to `podrun why` (the Why RPC): what a job attempt's processes are doing now
// (process_probe.h: state, wait channel, system call, CPU over a window, after an optional
// signal to those that catch it), their stacks (stack_dump.h) and the end of its log
// (log_tail.h). Bounded: the CPU window and the stack timeout are the request's, capped.
#pragma once

#include <cstdint>

#include "proto/agent.pb.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"

namespace podrun::agent {

// The longest CPU window and stack timeout a request may ask for.
inline constexpr uint32_t kMaxCpuWindowMs = 60'000;
inline constexpr uint32_t kMaxStackTimeoutMs = 120'000;

// Throws AgentError (invalid argument) for a request out of bounds: a negative or unknown
// signal, a window or timeout over the maxima.
void CheckWhyRequest(const v1::WhyRequest& req);

// Fills `reply` for the attempt in `dir`, whose state is `snap`. Processes are probed only while
// the job runs; stacks are taken (when asked) with the tools found on the agent's PATH. Throws
// std::system_error when the log cannot be read.
void FillWhy(const JobDir& dir, const JobSnapshot& snap, const v1::WhyRequest& req,
             v1::WhyReply* reply);

}  // namespace podrun::agent
