// The agent's RPC handlers: translate requests to JobRunner calls and errors to gRPC statuses.
#include "worker/agent_service.h"

#include <glob.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "proto/log_record.h"
#include "proto/protocol_version.h"
#include "worker/agent_error.h"

namespace podrun::agent {

static_assert(kProtocolVersion == v1::PROTOCOL_VERSION_CURRENT,
              "proto/protocol_version.h and proto/agent.proto disagree");

namespace {

using Clock = std::chrono::steady_clock;

// How often a following StreamLogs checks whether its client went away.
constexpr auto kFollowCheckInterval = std::chrono::milliseconds(500);

grpc::StatusCode ToStatusCode(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorKind::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case ErrorKind::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorKind::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

// Runs a handler body as one unit of activity, mapping exceptions to statuses.
template <typename Body>
grpc::Status Handle(ActivityTracker& activity, Body&& body) {
  activity.RpcBegan();
  grpc::Status status;
  try {
    status = body();
  } catch (const AgentError& e) {
    status = grpc::Status(ToStatusCode(e.kind()), e.what());
  } catch (const std::exception& e) {
    status = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
  activity.RpcEnded();
  return status;
}

void CheckJobId(const std::string& job_id, uint32_t attempt) {
  if (!IsValidJobId(job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument, "bad job id \"" + job_id + "\"");
  }
  if (attempt == 0) throw AgentError(ErrorKind::kInvalidArgument, "attempt must be >= 1");
}

void FillEnd(const ExitStatus& exit, v1::ProcessEnd* end) {
  if (exit.exit_code) end->set_exit_code(*exit.exit_code);
  if (exit.signal) end->set_signal(*exit.signal);
  end->set_end_time_ns(exit.end_time_ns);
  end->set_stopped_by_request(exit.stopped_by_request);
  end->set_never_started(exit.never_started);
}

v1::StatusReply::State ToProtoState(JobState state) {
  switch (state) {
    case JobState::kUnknown:
      return v1::StatusReply::UNKNOWN;
    case JobState::kPrepared:
      return v1::StatusReply::PREPARED;
    case JobState::kRunning:
      return v1::StatusReply::RUNNING;
    case JobState::kExited:
      return v1::StatusReply::EXITED;
    case JobState::kStopped:
      return v1::StatusReply::STOPPED;
  }
  return v1::StatusReply::UNKNOWN;
}

}  // namespace

// ---- ActivityTracker --------------------------------------------------------------------------

ActivityTracker::ActivityTracker() : last_(Clock::now()) {}

void ActivityTracker::RpcBegan() {
  std::lock_guard lock(mu_);
  ++in_flight_;
}

void ActivityTracker::RpcEnded() {
  std::lock_guard lock(mu_);
  --in_flight_;
  last_ = Clock::now();
}

Clock::duration ActivityTracker::IdleFor() const {
  std::lock_guard lock(mu_);
  return in_flight_ > 0 ? Clock::duration::zero() : Clock::now() - last_;
}

std::vector<std::string> AcceleratorDevices() {
  std::vector<std::string> devices;
  for (const char* pattern : {"/dev/accel*", "/dev/vfio/*"}) {
    glob_t g{};
    if (::glob(pattern, 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) devices.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
  }
  std::sort(devices.begin(), devices.end());
  return devices;
}

// ---- AgentService -----------------------------------------------------------------------------

AgentService::AgentService(AgentInfo info, JobRunner& runner, ActivityTracker& activity,
                           std::function<void()> on_shutdown)
    : info_(std::move(info)),
      runner_(runner),
      activity_(activity),
      on_shutdown_(std::move(on_shutdown)) {}

void AgentService::BeginShutdown() { shutting_down_ = true; }

grpc::Status AgentService::Hello(grpc::ServerContext*, const v1::HelloRequest* req,
                                 v1::HelloReply* reply) {
  return Handle(activity_, [&] {
    if (req->protocol_version() != 0 && req->protocol_version() != kProtocolVersion) {
      return grpc::Status(
          grpc::StatusCode::FAILED_PRECONDITION,
          "launcher speaks protocol " + std::to_string(req->protocol_version()) +
              ", agent speaks " + std::to_string(kProtocolVersion) +
              ": use a podrun and podrun-agent of the same protocol version (agent " +
              info_.version + " at " + info_.home + ")");
    }
    char hostname[256] = {};
    ::gethostname(hostname, sizeof hostname - 1);
    reply->set_protocol_version(kProtocolVersion);
    reply->set_agent_version(info_.version);
    reply->set_hostname(hostname);
    reply->set_pid(::getpid());
    reply->set_home(info_.home);
    for (auto& device : AcceleratorDevices()) reply->add_accelerator_devices(device);
    reply->set_user_home(UserHome().string());
    reply->set_now_ns(WallClockNs());
    reply->set_running_jobs(static_cast<uint32_t>(runner_.RunningJobs()));
    reply->set_idle_exit_seconds(static_cast<uint32_t>(info_.idle_exit.count()));
    reply->set_agent_start_time_ns(info_.start_time_ns);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Prepare(grpc::ServerContext*, const v1::PrepareRequest* req,
                                   v1::PrepareReply* reply) {
  // The request's env holds the job's secret_env values: wipe it once Prepare is done with it,
  // whatever the outcome (the job runner keeps its own copy only until the process is forked).
  struct WipeEnv {
    v1::PrepareRequest* request;
    ~WipeEnv() {
      for (auto& entry : *request->mutable_env()) {
        ::explicit_bzero(entry.second.data(), entry.second.size());
      }
      request->mutable_env()->clear();
    }
  } wipe_env{const_cast<v1::PrepareRequest*>(req)};  // gRPC's own message, ours until we return
  return Handle(activity_, [&] {
    JobSpec spec;
    spec.job_id = req->job_id();
    spec.attempt = req->attempt();
    spec.worker_id = req->worker_id();
    spec.workdir = req->workdir();
    spec.env.insert(req->env().begin(), req->env().end());
    spec.run = req->run();
    spec.grace_period = std::chrono::seconds(req->grace_seconds());
    PrepareResult result = runner_.Prepare(std::move(spec));
    reply->set_workdir(result.workdir.string());
    reply->set_job_dir(result.job_dir.string());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Start(grpc::ServerContext*, const v1::StartRequest* req,
                                 v1::StartReply* reply) {
  return Handle(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    // Waits for start_at (see JobRunner::Start).
    StartResult result = runner_.Start(req->job_id(), req->attempt(), req->start_at_ns());
    reply->set_pid(result.pid);
    reply->set_start_time_ns(result.start_time_ns);
    reply->set_already_started(result.already_started);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::StreamLogs(grpc::ServerContext* ctx, const v1::LogsRequest* req,
                                      grpc::ServerWriter<v1::LogBatch>* writer) {
  return Handle(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    std::shared_ptr<Job> job = runner_.Find(req->job_id(), req->attempt());
    // An earlier agent's attempt is final: read its state (throws kNotFound if unknown) once.
    std::optional<JobSnapshot> disk_snap;
    if (!job) disk_snap = runner_.Status(req->job_id(), req->attempt());
    JobDir dir(runner_.home(), req->job_id(), req->attempt());
    LogReader reader(dir.log_path(), std::max<uint64_t>(req->from_seq(), 1));
    while (true) {
      // Taken before reading: if the job had ended by then, the read sees every record.
      const JobSnapshot snap = job ? job->Snapshot() : *disk_snap;
      std::vector<LogRecord> records = reader.ReadSome();
      if (!records.empty()) {
        v1::LogBatch batch;
        for (LogRecord& r : records) {
          v1::LogRecord* out = batch.add_records();
          out->set_seq(r.seq);
          out->set_time_ns(r.time_ns);
          out->set_stream(static_cast<v1::LogRecord::Stream>(r.stream));
          out->set_data(std::move(r.data));
        }
        if (!writer->Write(batch)) {
          return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
        }
        continue;
      }
      if (snap.exit) {
        v1::LogBatch last;
        FillEnd(*snap.exit, last.mutable_end());
        writer->Write(last);
        return grpc::Status::OK;
      }
      // Nothing new and not ended: done unless following a job this agent supervises.
      if (!req->follow() || !job) return grpc::Status::OK;
      if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      if (shutting_down_) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down");
      }
      job->WaitForProgress(reader.last_seq(), Clock::now() + kFollowCheckInterval);
    }
  });
}

grpc::Status AgentService::Status(grpc::ServerContext*, const v1::StatusRequest* req,
                                  v1::StatusReply* reply) {
  return Handle(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    const JobSnapshot snap = runner_.Status(req->job_id(), req->attempt());
    reply->set_state(ToProtoState(snap.state));
    reply->set_pid(snap.pid);
    reply->set_start_time_ns(snap.start_time_ns);
    reply->set_last_seq(snap.last_seq);
    reply->set_worker_id(snap.worker_id);
    if (snap.exit) {
      reply->set_exit_code(snap.exit->exit_code.value_or(0));
      reply->set_signal(snap.exit->signal.value_or(0));
      reply->set_end_time_ns(snap.exit->end_time_ns);
      FillEnd(*snap.exit, reply->mutable_end());
    }
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Stop(grpc::ServerContext*, const v1::StopRequest* req,
                                v1::StopReply* reply) {
  return Handle(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    StopResult result =
        runner_.Stop(req->job_id(), req->attempt(), std::chrono::seconds(req->grace_seconds()));
    reply->set_was_running(result.was_running);
    reply->set_killed(result.killed);
    FillEnd(result.exit, reply->mutable_end());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Shutdown(grpc::ServerContext*, const v1::ShutdownRequest* req,
                                    v1::ShutdownReply*) {
  return Handle(activity_, [&] {
    if (const int running = runner_.RunningJobs(); running > 0) {
      if (!req->force()) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            std::to_string(running) + " job(s) running; use force to stop them");
      }
      runner_.StopAll();
    }
    on_shutdown_();
    return grpc::Status::OK;
  });
}

}  // namespace podrun::agent
