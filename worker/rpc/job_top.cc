// The Top RPC's reply (see job_top.h).
#include "worker/rpc/job_top.h"

#include "worker/job/job_runner.h"
#include "worker/job/job_usage.h"
#include "worker/job/log_tail.h"
#include "worker/jobdir/step_file.h"
#include "worker/rpc/agent_proto.h"

namespace podrun::agent {

void FillTop(const JobDir& dir, const JobSnapshot& snap, v1::TopReply* reply) {
  reply->set_state(ToProtoState(snap.state));
  reply->set_pid(snap.pid);
  reply->set_start_time_ns(snap.start_time_ns);
  if (snap.exit) FillEnd(*snap.exit, reply->mutable_end());
  if (snap.state == JobState::kRunning) {
    if (const std::optional<ProcessIdentity> leader = dir.ReadJobProcess()) {
      JobUsage usage = ReadJobUsage(*leader);
      reply->set_sample_monotonic_ns(usage.monotonic_ns);
      reply->set_cpu_ns(usage.cpu_ns);
      reply->set_rss_bytes(usage.rss_bytes);
      reply->set_processes(usage.processes);
      for (std::string& device : usage.accelerators) reply->add_accelerators(std::move(device));
    }
  }
  LogTail tail = ReadLogTail(dir.log_path());
  reply->set_last_seq(tail.last_seq);
  reply->set_output_bytes(tail.output_bytes);
  reply->set_last_output_ns(tail.last_output_ns);
  reply->set_last_line(std::move(tail.last_line));
  if (auto steps = ReadStepFile(dir)) *reply->mutable_steps() = std::move(*steps);
  // After the log: a silence measured against this clock is never negative.
  reply->set_now_ns(WallClockNs());
}

}  // namespace podrun::agent
