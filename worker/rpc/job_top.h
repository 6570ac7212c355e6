// The agent's answer to `podrun top` (the Top RPC): a job attempt's state with what its processes
// use now (job_usage.h), the end of its log (log_tail.h) and its steps as the supervisor recorded
// them (step_file.h). Bounded work, whatever the job.
#pragma once

#include "proto/agent.pb.h"
#include "worker/jobdir/job_dir.h"
#include "worker/jobdir/job_state.h"

namespace podrun::agent {

// Fills `reply` for the attempt in `dir`, whose state is `snap`. Usage is sampled only while the
// job runs. Throws std::system_error when the log cannot be read.
void FillTop(const JobDir& dir, const JobSnapshot& snap, v1::TopReply* reply);

}  // namespace podrun::agent
