// The launcher's gRPC calls to an agent for its jobs' lifecycle and the worker's health, with
// deadlines, and conversion between the generated messages and the launcher's types (see
// agent_client.h).
#include "launcher/agent_link/agent_client.h"

#include <algorithm>
#include <chrono>

#include "launcher/agent_link/agent_rpc.h"
#include "launcher/base/error.h"
#include "proto/agent.grpc.pb.h"
#include "proto/protocol_version.h"

namespace podrun {

using agent_rpc::Check;
using agent_rpc::FromProto;
using agent_rpc::GapFromProto;
using agent_rpc::SetTimeout;

namespace {

constexpr auto kHelloTimeout = std::chrono::seconds(15);
constexpr auto kPrepareTimeout = std::chrono::seconds(60);  // creates directories
constexpr auto kStartTimeout = std::chrono::seconds(15);
constexpr auto kConfirmTimeout = std::chrono::seconds(10);  // one line to the supervisor
constexpr auto kStatusTimeout = std::chrono::seconds(30);   // may scan a large log
constexpr auto kInspectTimeout = std::chrono::seconds(30);  // a login shell, freeing chips
constexpr auto kMountTimeout = std::chrono::minutes(5);     // may install the NFS server
constexpr auto kTopTimeout = std::chrono::seconds(10);      // /proc and a log's tail
constexpr auto kStepsTimeout = std::chrono::seconds(5);     // one small file
// Why waits the request's CPU window and stack timeout; this is for /proc, the log's tail and
// stopping the stack tools.
constexpr auto kWhyExtraTimeout = std::chrono::seconds(10);
// Stop waits for the grace period, then for the killed group to disappear.
constexpr auto kStopExtraTimeout = std::chrono::seconds(60);
constexpr auto kShutdownTimeout = std::chrono::seconds(30);

AgentJobState FromProto(v1::StatusReply::State state) {
  switch (state) {
    case v1::StatusReply::PREPARED:
      return AgentJobState::kPrepared;
    case v1::StatusReply::RUNNING:
      return AgentJobState::kRunning;
    case v1::StatusReply::EXITED:
      return AgentJobState::kExited;
    case v1::StatusReply::STOPPED:
      return AgentJobState::kStopped;
    case v1::StatusReply::LOST:
      return AgentJobState::kLost;
    default:
      return AgentJobState::kUnknown;
  }
}

AgentProcessState FromProto(v1::ProcessState state) {
  switch (state) {
    case v1::PROCESS_RUNNING:
      return AgentProcessState::kRunning;
    case v1::PROCESS_SLEEPING:
      return AgentProcessState::kSleeping;
    case v1::PROCESS_DISK_WAIT:
      return AgentProcessState::kDiskWait;
    case v1::PROCESS_STOPPED:
      return AgentProcessState::kStopped;
    case v1::PROCESS_TRACING_STOP:
      return AgentProcessState::kTracingStop;
    case v1::PROCESS_ZOMBIE:
      return AgentProcessState::kZombie;
    case v1::PROCESS_IDLE:
      return AgentProcessState::kIdle;
    case v1::PROCESS_DEAD:
      return AgentProcessState::kDead;
    default:
      return AgentProcessState::kUnknown;
  }
}

AgentSteps FromProto(const v1::StepRecord& record) {
  AgentSteps out;
  if (record.has_step()) out.step = record.step();
  out.step_ns = record.step_ns();
  out.first_step_ns = record.first_step_ns();
  for (const v1::StepPoint& p : record.recent()) out.recent.push_back({p.time_ns(), p.step()});
  for (const v1::StepPoint& p : record.samples()) out.samples.push_back({p.time_ns(), p.step()});
  return out;
}

}  // namespace

const char* AgentProcessStateName(AgentProcessState state) {
  switch (state) {
    case AgentProcessState::kRunning:
      return "running";
    case AgentProcessState::kSleeping:
      return "sleeping";
    case AgentProcessState::kDiskWait:
      return "disk wait";
    case AgentProcessState::kStopped:
      return "stopped";
    case AgentProcessState::kTracingStop:
      return "tracing stop";
    case AgentProcessState::kZombie:
      return "zombie";
    case AgentProcessState::kIdle:
      return "idle";
    case AgentProcessState::kDead:
      return "dead";
    case AgentProcessState::kUnknown:
      break;
  }
  return "?";
}

struct AgentClient::Stub {
  std::unique_ptr<v1::Agent::Stub> stub;
};

AgentClient::AgentClient(std::shared_ptr<grpc::Channel> channel)
    : stub_(std::make_unique<Stub>(Stub{v1::Agent::NewStub(channel)})),
      logs_(channel),
      sync_(std::move(channel)) {}

AgentClient::~AgentClient() = default;

AgentHello AgentClient::Hello(bool tpu_worker_number) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kHelloTimeout);
  v1::HelloRequest req;
  req.set_protocol_version(kProtocolVersion);
  req.set_without_tpu_worker_number(!tpu_worker_number);
  req.set_launcher_version(PODRUN_VERSION);
  v1::HelloReply reply;
  Check(stub_->stub->Hello(&ctx, req, &reply), "Hello");
  if (reply.protocol_version() != kProtocolVersion) {  // an agent that failed to refuse
    throw Error(ExitCode::kUnreachable, "agent Hello: launcher speaks protocol " +
                                            std::to_string(kProtocolVersion) + ", agent speaks " +
                                            std::to_string(reply.protocol_version()));
  }
  AgentHello hello;
  hello.protocol_version = reply.protocol_version();
  hello.agent_version = reply.agent_version();
  hello.hostname = reply.hostname();
  hello.pid = reply.pid();
  hello.home = reply.home();
  hello.user_home = reply.user_home();
  hello.accelerator_devices.assign(reply.accelerator_devices().begin(),
                                   reply.accelerator_devices().end());
  hello.now_ns = reply.now_ns();
  hello.running_jobs = reply.running_jobs();
  hello.idle_exit_seconds = reply.idle_exit_seconds();
  if (reply.tpu_worker_number() >= 0) hello.tpu_worker_number = reply.tpu_worker_number();
  return hello;
}

AgentPrepareReply AgentClient::Prepare(const AgentPrepareRequest& request) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kPrepareTimeout);
  v1::PrepareRequest req;
  req.set_job_id(request.job_id);
  req.set_attempt(request.attempt);
  req.set_worker_id(request.worker_id);
  req.set_workdir(request.workdir);
  req.mutable_env()->insert(request.env.begin(), request.env.end());
  req.set_run(request.run);
  req.set_grace_seconds(request.grace_seconds);
  req.set_free_accelerators(request.free_accelerators);
  req.set_setup_stamp(request.setup_stamp);
  req.set_force_setup(request.force_setup);
  req.set_progress(request.progress);
  v1::PrepareReply reply;
  Check(stub_->stub->Prepare(&ctx, req, &reply), "Prepare");
  return {reply.workdir(),
          {reply.accelerator_actions().begin(), reply.accelerator_actions().end()},
          reply.setup_cached()};
}

AgentStartReply AgentClient::Start(const std::string& job_id, uint32_t attempt, int64_t start_at_ns,
                                   std::chrono::milliseconds confirm_within) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kStartTimeout);
  v1::StartRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_start_at_ns(start_at_ns);
  req.set_confirm_within_ms(static_cast<uint32_t>(confirm_within.count()));
  v1::StartReply reply;
  Check(stub_->stub->Start(&ctx, req, &reply), "Start");
  return {reply.pid(), reply.start_time_ns(), reply.already_started(), reply.received_ns()};
}

bool AgentClient::Confirm(const std::string& job_id, uint32_t attempt) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kConfirmTimeout);
  v1::ConfirmRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  v1::ConfirmReply reply;
  Check(stub_->stub->Confirm(&ctx, req, &reply), "Confirm");
  return reply.ended();
}

AgentInspection AgentClient::Inspect(bool fix, bool all_users) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kInspectTimeout);
  v1::InspectRequest req;
  req.set_fix(fix);
  req.set_all_users(all_users);
  v1::InspectReply reply;
  Check(stub_->stub->Inspect(&ctx, req, &reply), "Inspect");
  AgentInspection out;
  out.accelerator_devices.assign(reply.accelerator_devices().begin(),
                                 reply.accelerator_devices().end());
  for (const auto& h : reply.holders()) out.holders.push_back({h.pid(), h.command(), h.device()});
  out.lockfile_exists = reply.lockfile_exists();
  out.lockfile_stale = reply.lockfile_stale();
  out.home_free_bytes = reply.home_free_bytes();
  out.tmp_free_bytes = reply.tmp_free_bytes();
  out.login_ld_preload = reply.login_ld_preload();
  out.fix_actions.assign(reply.fix_actions().begin(), reply.fix_actions().end());
  return out;
}

std::vector<std::string> AgentClient::Mount(const AgentMountRequest& request) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kMountTimeout);
  v1::MountRequest req;
  req.set_worker_id(request.worker_id);
  for (const std::string& a : request.peer_addresses) req.add_peer_addresses(a);
  for (const AgentMountRequest::Entry& e : request.mounts) {
    v1::MountSpec* m = req.add_mounts();
    m->set_type(e.type);
    m->set_server_worker(e.server_worker);
    m->set_server(e.server);
    m->set_export_path(e.export_path);
    m->set_bucket(e.bucket);
    m->set_source(e.source);
    m->set_path(e.path);
    m->set_options(e.options);
  }
  v1::MountReply reply;
  Check(stub_->stub->Mount(&ctx, req, &reply), "Mount");
  return {reply.actions().begin(), reply.actions().end()};
}

std::optional<AgentJobStatus> AgentClient::Status(const std::string& job_id, uint32_t attempt) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kStatusTimeout);
  v1::StatusRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  v1::StatusReply reply;
  grpc::Status status = stub_->stub->Status(&ctx, req, &reply);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
  Check(status, "Status");
  AgentJobStatus out;
  out.state = FromProto(reply.state());
  out.pid = reply.pid();
  out.start_time_ns = reply.start_time_ns();
  out.last_seq = reply.last_seq();
  out.worker_id = reply.worker_id();
  if (reply.has_end()) out.end = FromProto(reply.end());
  out.gap = GapFromProto(reply.has_log_gap(), reply.log_gap());
  return out;
}

std::optional<AgentTopSample> AgentClient::Top(const std::string& job_id, uint32_t attempt) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kTopTimeout);
  v1::TopRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  v1::TopReply reply;
  grpc::Status status = stub_->stub->Top(&ctx, req, &reply);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
  Check(status, "Top");
  AgentTopSample out;
  out.state = FromProto(reply.state());
  out.pid = reply.pid();
  out.start_time_ns = reply.start_time_ns();
  if (reply.has_end()) out.end = FromProto(reply.end());
  out.now_ns = reply.now_ns();
  out.sample_monotonic_ns = reply.sample_monotonic_ns();
  out.cpu_ns = reply.cpu_ns();
  out.rss_bytes = reply.rss_bytes();
  out.processes = reply.processes();
  out.accelerators.assign(reply.accelerators().begin(), reply.accelerators().end());
  out.last_seq = reply.last_seq();
  out.output_bytes = reply.output_bytes();
  out.last_output_ns = reply.last_output_ns();
  out.last_line = std::move(*reply.mutable_last_line());
  if (reply.has_steps() && reply.steps().has_step()) {
    out.steps = FromProto(reply.steps());
    out.steps->now_ns = reply.now_ns();
  }
  return out;
}

std::optional<AgentSteps> AgentClient::Steps(const std::string& job_id, uint32_t attempt) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kStepsTimeout);
  v1::StepsRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  v1::StepsReply reply;
  grpc::Status status = stub_->stub->Steps(&ctx, req, &reply);
  // An agent of an earlier build has no Steps: no record there.
  if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) return std::nullopt;
  Check(status, "Steps");
  if (!reply.found() || !reply.record().has_step()) return std::nullopt;
  AgentSteps out = FromProto(reply.record());
  out.now_ns = reply.now_ns();
  return out;
}

std::optional<AgentWhyReport> AgentClient::Why(const std::string& job_id, uint32_t attempt,
                                               const AgentWhyRequest& request) {
  using std::chrono::milliseconds;
  using namespace std::chrono_literals;
  // The agent's defaults for zero (proto's WhyRequest).
  const milliseconds window = request.cpu_window.count() > 0 ? request.cpu_window : 1000ms;
  const milliseconds stack_timeout =
      request.stack_timeout.count() > 0 ? request.stack_timeout : 10000ms;
  grpc::ClientContext ctx;
  SetTimeout(ctx, window + (request.stacks ? stack_timeout : 0ms) + kWhyExtraTimeout);
  v1::WhyRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_signal(request.signal);
  req.set_stacks(request.stacks);
  req.set_cpu_window_ms(static_cast<uint32_t>(std::max<int64_t>(0, request.cpu_window.count())));
  req.set_stack_timeout_ms(
      static_cast<uint32_t>(std::max<int64_t>(0, request.stack_timeout.count())));
  v1::WhyReply reply;
  grpc::Status status = stub_->stub->Why(&ctx, req, &reply);
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) return std::nullopt;
  Check(status, "Why");
  AgentWhyReport out;
  out.state = FromProto(reply.state());
  out.now_ns = reply.now_ns();
  out.last_output_ns = reply.last_output_ns();
  out.last_line = std::move(*reply.mutable_last_line());
  out.stack_note = std::move(*reply.mutable_stack_note());
  out.signal_note = std::move(*reply.mutable_signal_note());
  out.gather_ms = reply.gather_ms();
  out.processes_left_out = reply.processes_left_out();
  out.processes.reserve(static_cast<size_t>(reply.processes_size()));
  for (v1::ProcessReport& p : *reply.mutable_processes()) {
    AgentProcessReport& r = out.processes.emplace_back();
    r.pid = p.pid();
    r.ppid = p.ppid();
    r.command = std::move(*p.mutable_command());
    r.cmdline = std::move(*p.mutable_cmdline());
    r.state = FromProto(p.state());
    r.wchan = std::move(*p.mutable_wchan());
    r.syscall = std::move(*p.mutable_syscall());
    r.cpu_percent = p.cpu_percent();
    r.threads = p.threads();
    r.started_ns = p.started_ns();
    r.signalled = p.signalled();
    r.stack_tool = std::move(*p.mutable_stack_tool());
    r.stack = std::move(*p.mutable_stack());
    r.stack_error = std::move(*p.mutable_stack_error());
  }
  return out;
}

AgentStopReply AgentClient::Stop(const std::string& job_id, uint32_t attempt,
                                 std::chrono::seconds grace) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, grace + kStopExtraTimeout);
  v1::StopRequest req;
  req.set_job_id(job_id);
  req.set_attempt(attempt);
  req.set_grace_seconds(static_cast<uint32_t>(grace.count()));
  v1::StopReply reply;
  Check(stub_->stub->Stop(&ctx, req, &reply), "Stop");
  return {reply.was_running(), reply.killed(), FromProto(reply.end())};
}

void AgentClient::Shutdown(bool force) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kShutdownTimeout);
  v1::ShutdownRequest req;
  req.set_force(force);
  v1::ShutdownReply reply;
  Check(stub_->stub->Shutdown(&ctx, req, &reply), "Shutdown");
}

}  // namespace podrun
