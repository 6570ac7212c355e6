// The Why RPC's reply (see job_why.h).
#include "worker/rpc/job_why.h"

#include <signal.h>

#include <chrono>

#include "worker/base/agent_error.h"
#include "worker/base/wall_clock.h"
#include "worker/job/log_tail.h"
#include "worker/job/process_probe.h"
#include "worker/job/stack_dump.h"
#include "worker/rpc/agent_proto.h"

namespace podrun::agent {
namespace {

v1::ProcessState ProtoState(char code) {
  switch (code) {
    case 'R':
      return v1::PROCESS_RUNNING;
    case 'S':
      return v1::PROCESS_SLEEPING;
    case 'D':
      return v1::PROCESS_DISK_WAIT;
    case 'T':
      return v1::PROCESS_STOPPED;
    case 't':
      return v1::PROCESS_TRACING_STOP;
    case 'Z':
      return v1::PROCESS_ZOMBIE;
    case 'I':
      return v1::PROCESS_IDLE;
    case 'X':
      return v1::PROCESS_DEAD;
    default:
      return v1::PROCESS_STATE_UNKNOWN;
  }
}

void FillProcess(ProcessProbe& p, v1::ProcessReport* out) {
  out->set_pid(p.pid);
  out->set_ppid(p.ppid);
  out->set_command(std::move(p.command));
  out->set_cmdline(std::move(p.cmdline));
  out->set_state(ProtoState(p.state_code));
  out->set_wchan(std::move(p.wchan));
  out->set_syscall(std::move(p.syscall));
  out->set_cpu_percent(p.cpu_percent);
  out->set_threads(p.threads);
  out->set_started_ns(p.started_ns);
  out->set_signalled(p.signalled);
  out->set_stack_tool(std::move(p.stack_tool));
  out->set_stack(std::move(p.stack));
  out->set_stack_error(std::move(p.stack_error));
}

}  // namespace

void CheckWhyRequest(const v1::WhyRequest& req) {
  if (req.signal() < 0 || req.signal() > SIGRTMAX) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "signal " + std::to_string(req.signal()) + " is not a signal");
  }
  if (req.cpu_window_ms() > kMaxCpuWindowMs) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "cpu window " + std::to_string(req.cpu_window_ms()) + " ms is over " +
                         std::to_string(kMaxCpuWindowMs) + " ms");
  }
  if (req.stack_timeout_ms() > kMaxStackTimeoutMs) {
    throw AgentError(ErrorKind::kInvalidArgument,
                     "stack timeout " + std::to_string(req.stack_timeout_ms()) + " ms is over " +
                         std::to_string(kMaxStackTimeoutMs) + " ms");
  }
}

void FillWhy(const JobDir& dir, const JobSnapshot& snap, const v1::WhyRequest& req,
             v1::WhyReply* reply) {
  const auto begin = std::chrono::steady_clock::now();
  reply->set_state(ToProtoState(snap.state));
  if (snap.state == JobState::kRunning) {
    if (const std::optional<ProcessIdentity> leader = dir.ReadJobProcess()) {
      ProbeOptions probe_options;
      probe_options.signal = req.signal();
      if (req.cpu_window_ms() > 0) {
        probe_options.cpu_window = std::chrono::milliseconds(req.cpu_window_ms());
      }
      JobProbe probe = ProbeJob(*leader, probe_options);
      reply->set_signal_note(std::move(probe.signal_note));
      reply->set_processes_left_out(static_cast<uint32_t>(probe.left_out));
      if (req.stacks()) {
        StackOptions options;
        if (req.stack_timeout_ms() > 0) {
          options.timeout = std::chrono::milliseconds(req.stack_timeout_ms());
        }
        std::string note;
        DumpStacks(&probe.processes, options, &note);
        reply->set_stack_note(std::move(note));
      }
      for (ProcessProbe& p : probe.processes) FillProcess(p, reply->add_processes());
    }
  }
  LogTail tail = ReadLogTail(dir.log_path());
  reply->set_last_output_ns(tail.last_output_ns);
  reply->set_last_line(std::move(tail.last_line));
  // After the log: a silence measured against this clock is never negative.
  reply->set_now_ns(WallClockNs());
  reply->set_gather_ms(static_cast<uint32_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                 std::chrono::steady_clock::now() - begin)
                                                 .count()));
}

}  // namespace podrun::agent
