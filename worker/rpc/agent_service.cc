// The agent's RPC handlers: translate requests to JobRunner calls and errors to gRPC statuses.
#include "worker/rpc/agent_service.h"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include "proto/log_record.h"
#include "proto/protocol_version.h"
#include "proto/shell_quote.h"
#include "worker/base/agent_error.h"
#include "worker/host/accelerators.h"
#include "worker/host/tpu_metadata.h"
#include "worker/job/job_log_stream.h"
#include "worker/job/supervisor_client.h"
#include "worker/jobdir/step_file.h"
#include "worker/rpc/agent_proto.h"
#include "worker/rpc/grpc_log_sink.h"
#include "worker/rpc/job_top.h"
#include "worker/rpc/job_why.h"
#include "worker/rpc/mount_rpc.h"
#include "worker/rpc/rpc_call.h"

extern char** environ;

namespace podrun::agent {

static_assert(kProtocolVersion == v1::PROTOCOL_VERSION_CURRENT,
              "proto/protocol_version.h and proto/agent.proto disagree");

namespace {

using Clock = std::chrono::steady_clock;

// How long processes holding the accelerators get between SIGTERM and SIGKILL.
constexpr auto kFreeAcceleratorsGrace = std::chrono::milliseconds(5000);

// LD_PRELOAD as the user's login shell sets it (a TCMalloc preload there breaks gsutil and
// more); "" if unset or the shell does not answer within a few seconds.
std::string LoginLdPreload() {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return "";
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::string bash = "/bin/bash", flag = "-lc", script = "printf %s \"$LD_PRELOAD\"";
  char* argv[] = {bash.data(), flag.data(), script.data(), nullptr};
  const pid_t pid = ::fork();  // the child makes only async-signal-safe calls
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(devnull, STDIN_FILENO);
    ::dup2(devnull, STDERR_FILENO);
    ::execve(argv[0], argv, environ);
    ::_exit(127);
  }
  if (devnull >= 0) ::close(devnull);
  ::close(out[1]);
  std::string text;
  char buf[4096];
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  if (pid > 0) {
    ::kill(pid, SIGKILL);  // done, or too slow
    ::waitpid(pid, nullptr, 0);
  }
  return text;
}

void CheckJobId(const std::string& job_id, uint32_t attempt) {
  if (!IsValidJobId(job_id)) {
    throw AgentError(ErrorKind::kInvalidArgument, "bad job id \"" + job_id + "\"");
  }
  if (attempt == 0) throw AgentError(ErrorKind::kInvalidArgument, "attempt must be >= 1");
}

}  // namespace

std::vector<std::string> AcceleratorDevices() {
  std::vector<std::string> devices;
  for (const std::string& p : AcceleratorPatterns()) {
    const char* pattern = p.c_str();
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

std::filesystem::path AgentService::SetupStampPath(const std::string& stamp) const {
  if (stamp.size() != 64 || stamp.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw AgentError(ErrorKind::kInvalidArgument, "bad setup stamp \"" + stamp + "\"");
  }
  // Per host: a home shared over NFS keeps each worker's stamps apart.
  char hostname[256] = {};
  ::gethostname(hostname, sizeof hostname - 1);
  const std::filesystem::path dir = std::filesystem::path(info_.home) / "stamps" / hostname;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // 0700: the agent's umask
  if (ec) {
    throw AgentError(ErrorKind::kFailedPrecondition,
                     "setup stamps " + dir.string() + ": " + ec.message());
  }
  return dir / stamp;
}

AgentService::AgentService(AgentInfo info, JobRunner& runner, ActivityTracker& activity,
                           std::function<void(bool handover)> on_shutdown)
    : info_(std::move(info)),
      runner_(runner),
      activity_(activity),
      on_shutdown_(std::move(on_shutdown)) {}

void AgentService::BeginShutdown() { shutting_down_ = true; }

grpc::Status AgentService::Hello(grpc::ServerContext*, const v1::HelloRequest* req,
                                 v1::HelloReply* reply) {
  return HandleRpc(activity_, [&] {
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
    reply->set_build_id(info_.build_id);
    reply->set_tpu_worker_number(
        (req->without_tpu_worker_number() ? TpuWorkerNumberIfKnown() : TpuWorkerNumber())
            .value_or(-1));
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
  return HandleRpc(activity_, [&] {
    JobRequest spec;
    spec.job_id = req->job_id();
    spec.attempt = req->attempt();
    spec.worker_id = req->worker_id();
    spec.workdir = req->workdir();
    spec.env.insert(req->env().begin(), req->env().end());
    spec.run = req->run();
    spec.grace_period = std::chrono::seconds(req->grace_seconds());
    spec.progress = req->progress();
    if (req->free_accelerators()) {
      for (auto& action :
           FreeAccelerators(AcceleratorPatterns(), kLibtpuLockfile, kFreeAcceleratorsGrace)) {
        reply->add_accelerator_actions(std::move(action));
      }
    }
    if (!req->setup_stamp().empty()) {
      const std::filesystem::path stamp = SetupStampPath(req->setup_stamp());
      if (!req->force_setup() && std::filesystem::exists(stamp)) {
        reply->set_setup_cached(true);
        return grpc::Status::OK;
      }
      // The stamp is recorded by the setup's own shell once the setup succeeded.
      spec.run = "/bin/bash -c " + ShellQuote(spec.run) + " && touch " + ShellQuote(stamp.string());
    }
    PrepareResult result = runner_.Prepare(std::move(spec));
    reply->set_workdir(result.workdir.string());
    reply->set_job_dir(result.job_dir.string());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Start(grpc::ServerContext*, const v1::StartRequest* req,
                                 v1::StartReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    // Waits for start_at (see JobRunner::Start); the window bounded (a bad value must not keep
    // an unconfirmed job running for days).
    const auto confirm_within =
        std::min(std::chrono::milliseconds(req->confirm_within_ms()), kMaxStartConfirmWindow);
    StartResult result =
        runner_.Start(req->job_id(), req->attempt(), req->start_at_ns(), confirm_within);
    reply->set_pid(result.pid);
    reply->set_start_time_ns(result.start_time_ns);
    reply->set_already_started(result.already_started);
    reply->set_received_ns(result.received_ns);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Confirm(grpc::ServerContext*, const v1::ConfirmRequest* req,
                                   v1::ConfirmReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    reply->set_ended(runner_.Confirm(req->job_id(), req->attempt()));
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::StreamLogs(grpc::ServerContext* ctx, const v1::LogsRequest* req,
                                      grpc::ServerWriter<v1::LogBatch>* writer) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    // The job's files are the whole truth, whichever agent started it (job_state.h).
    JobSnapshot snap = runner_.Status(req->job_id(), req->attempt(), /*count_records=*/false);
    const JobDir dir(runner_.home(), req->job_id(), req->attempt());
    GrpcLogSink sink(writer);
    switch (StreamJobLog(runner_.home(), dir, std::move(snap), req->from_seq(), req->follow(), sink,
                         [&] { return !ctx->IsCancelled() && !shutting_down_; })) {
      case JobLogStreamEnd::kEnded:
      case JobLogStreamEnd::kCaughtUp:
        return grpc::Status::OK;
      case JobLogStreamEnd::kReaderGone:
        return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      case JobLogStreamEnd::kInterrupted:
        break;
    }
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is shutting down");
  });
}

grpc::Status AgentService::Status(grpc::ServerContext*, const v1::StatusRequest* req,
                                  v1::StatusReply* reply) {
  return HandleRpc(activity_, [&] {
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
    if (snap.gap) FillGap(*snap.gap, reply->mutable_log_gap());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Stop(grpc::ServerContext*, const v1::StopRequest* req,
                                v1::StopReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    StopResult result =
        runner_.Stop(req->job_id(), req->attempt(), std::chrono::seconds(req->grace_seconds()));
    reply->set_was_running(result.was_running);
    reply->set_killed(result.killed);
    FillEnd(result.exit, reply->mutable_end());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Inspect(grpc::ServerContext*, const v1::InspectRequest* req,
                                   v1::InspectReply* reply) {
  return HandleRpc(activity_, [&] {
    if (req->fix()) {
      for (auto& action : FreeAccelerators(AcceleratorPatterns(), kLibtpuLockfile,
                                           kFreeAcceleratorsGrace, req->all_users())) {
        reply->add_fix_actions(std::move(action));
      }
    }
    for (auto& device : AcceleratorDevices()) reply->add_accelerator_devices(device);
    for (const AcceleratorHolder& h : AcceleratorHolders(AcceleratorPatterns())) {
      v1::AcceleratorHolder* out = reply->add_holders();
      out->set_pid(h.pid);
      out->set_command(h.command);
      out->set_device(h.device);
    }
    const LockfileState lockfile = InspectLockfile(kLibtpuLockfile);
    reply->set_lockfile_exists(lockfile.exists);
    reply->set_lockfile_stale(lockfile.stale);
    struct statvfs fs {};
    if (::statvfs(info_.home.c_str(), &fs) == 0)
      reply->set_home_free_bytes(fs.f_bavail * fs.f_frsize);
    if (::statvfs("/tmp", &fs) == 0) reply->set_tmp_free_bytes(fs.f_bavail * fs.f_frsize);
    reply->set_login_ld_preload(LoginLdPreload());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Top(grpc::ServerContext*, const v1::TopRequest* req,
                               v1::TopReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    // The log's totals come from its tail (FillTop), not from reading every record.
    const JobSnapshot snap = runner_.Status(req->job_id(), req->attempt(), /*count_records=*/false);
    FillTop(JobDir(runner_.home(), req->job_id(), req->attempt()), snap, reply);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Why(grpc::ServerContext*, const v1::WhyRequest* req,
                               v1::WhyReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    CheckWhyRequest(*req);
    const JobSnapshot snap = runner_.Status(req->job_id(), req->attempt(), /*count_records=*/false);
    FillWhy(JobDir(runner_.home(), req->job_id(), req->attempt()), snap, *req, reply);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Steps(grpc::ServerContext*, const v1::StepsRequest* req,
                                 v1::StepsReply* reply) {
  return HandleRpc(activity_, [&] {
    CheckJobId(req->job_id(), req->attempt());
    if (auto record = ReadStepFile(JobDir(runner_.home(), req->job_id(), req->attempt()))) {
      reply->set_found(true);
      *reply->mutable_record() = std::move(*record);
    }
    reply->set_now_ns(WallClockNs());
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Shutdown(grpc::ServerContext*, const v1::ShutdownRequest* req,
                                    v1::ShutdownReply*) {
  return HandleRpc(activity_, [&] {
    if (req->handover()) {  // the jobs are their supervisors'; the new agent reads them
      on_shutdown_(true);
      return grpc::Status::OK;
    }
    if (const int running = runner_.RunningJobs(); running > 0) {
      if (!req->force()) {
        return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                            std::to_string(running) + " job(s) running; use force to stop them");
      }
      runner_.StopAll();
    }
    on_shutdown_(false);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::Mount(grpc::ServerContext*, const v1::MountRequest* req,
                                 v1::MountReply* reply) {
  return HandleRpc(activity_, [&] {
    MountForRequest(*req, reply);
    return grpc::Status::OK;
  });
}

grpc::Status AgentService::SyncCall(const std::function<void(SyncRpc&)>& call) {
  return HandleRpc(activity_, [&] {
    call(Sync());
    return grpc::Status::OK;
  });
}

SyncRpc& AgentService::Sync() {
  std::lock_guard lock(sync_mu_);
  if (!sync_) sync_ = std::make_unique<SyncRpc>(info_.home);
  return *sync_;
}

grpc::Status AgentService::BlobsMissing(grpc::ServerContext*, const v1::BlobsMissingRequest* req,
                                        v1::BlobsMissingReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.BlobsMissing(*req, reply); });
}

grpc::Status AgentService::PutBlobs(grpc::ServerContext*, grpc::ServerReader<v1::BlobChunk>* reader,
                                    v1::PutBlobsReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.PutBlobs(reader, reply); });
}

grpc::Status AgentService::ServeBlobs(grpc::ServerContext*, const v1::ServeBlobsRequest* req,
                                      v1::ServeBlobsReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.ServeBlobs(*req, reply); });
}

grpc::Status AgentService::FetchBlobs(grpc::ServerContext*, const v1::FetchBlobsRequest* req,
                                      v1::FetchBlobsReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.FetchBlobs(*req, reply); });
}

grpc::Status AgentService::EndServe(grpc::ServerContext*, const v1::EndServeRequest* req,
                                    v1::EndServeReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.EndServe(*req, reply); });
}

grpc::Status AgentService::ApplySync(grpc::ServerContext*, const v1::ApplySyncRequest* req,
                                     v1::ApplySyncReply* reply) {
  return SyncCall([&](SyncRpc& sync) { sync.ApplySync(*req, reply); });
}

}  // namespace podrun::agent
