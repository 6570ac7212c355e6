// The agent's gRPC service (proto/agent.proto) on top of a JobRunner, plus the activity
// bookkeeping that lets an idle agent exit by itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "proto/agent.grpc.pb.h"
#include "worker/job/job_runner.h"
#include "worker/rpc/rpc_call.h"
#include "worker/rpc/sync_rpc.h"

namespace podrun::agent {

struct AgentInfo {
  std::string version;  // podrun-agent's release
  std::string home;     // the agent's directory
  std::chrono::seconds idle_exit{0};
  int64_t start_time_ns = 0;
  std::string build_id;  // BuildId() of the agent's binary
};

// Implements every RPC with the sync API; handlers run on gRPC's thread pool. Each handler
// counts as activity for the ActivityTracker. `on_shutdown` is called (from a handler thread)
// when a Shutdown RPC was accepted; it must not block.
class AgentService final : public podrun::agent::v1::Agent::Service {
 public:
  AgentService(AgentInfo info, JobRunner& runner, ActivityTracker& activity,
               std::function<void(bool handover)> on_shutdown);

  grpc::Status Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req,
                     v1::HelloReply* reply) override;
  grpc::Status Prepare(grpc::ServerContext* ctx, const v1::PrepareRequest* req,
                       v1::PrepareReply* reply) override;
  grpc::Status Start(grpc::ServerContext* ctx, const v1::StartRequest* req,
                     v1::StartReply* reply) override;
  grpc::Status Confirm(grpc::ServerContext* ctx, const v1::ConfirmRequest* req,
                       v1::ConfirmReply* reply) override;
  grpc::Status StreamLogs(grpc::ServerContext* ctx, const v1::LogsRequest* req,
                          grpc::ServerWriter<v1::LogBatch>* writer) override;
  grpc::Status Status(grpc::ServerContext* ctx, const v1::StatusRequest* req,
                      v1::StatusReply* reply) override;
  grpc::Status Stop(grpc::ServerContext* ctx, const v1::StopRequest* req,
                    v1::StopReply* reply) override;
  grpc::Status Inspect(grpc::ServerContext* ctx, const v1::InspectRequest* req,
                       v1::InspectReply* reply) override;
  grpc::Status Top(grpc::ServerContext* ctx, const v1::TopRequest* req,
                   v1::TopReply* reply) override;
  grpc::Status Why(grpc::ServerContext* ctx, const v1::WhyRequest* req,
                   v1::WhyReply* reply) override;
  grpc::Status Steps(grpc::ServerContext* ctx, const v1::StepsRequest* req,
                     v1::StepsReply* reply) override;
  grpc::Status Shutdown(grpc::ServerContext* ctx, const v1::ShutdownRequest* req,
                        v1::ShutdownReply* reply) override;
  grpc::Status Mount(grpc::ServerContext* ctx, const v1::MountRequest* req,
                     v1::MountReply* reply) override;
  grpc::Status BlobsMissing(grpc::ServerContext* ctx, const v1::BlobsMissingRequest* req,
                            v1::BlobsMissingReply* reply) override;
  grpc::Status PutBlobs(grpc::ServerContext* ctx, grpc::ServerReader<v1::BlobChunk>* reader,
                        v1::PutBlobsReply* reply) override;
  grpc::Status ServeBlobs(grpc::ServerContext* ctx, const v1::ServeBlobsRequest* req,
                          v1::ServeBlobsReply* reply) override;
  grpc::Status FetchBlobs(grpc::ServerContext* ctx, const v1::FetchBlobsRequest* req,
                          v1::FetchBlobsReply* reply) override;
  grpc::Status EndServe(grpc::ServerContext* ctx, const v1::EndServeRequest* req,
                        v1::EndServeReply* reply) override;
  grpc::Status ApplySync(grpc::ServerContext* ctx, const v1::ApplySyncRequest* req,
                         v1::ApplySyncReply* reply) override;

  // Makes following StreamLogs calls finish promptly (called before the server shuts down).
  void BeginShutdown();

 private:
  // <home>/stamps/<hostname>/<stamp> (the directory created 0700); throws AgentError for a stamp
  // that is not 64 hex digits.
  std::filesystem::path SetupStampPath(const std::string& stamp) const;

  // The sync RPCs' state, made on first use (its blob cache lives under the home).
  SyncRpc& Sync();
  // Runs `call` on the sync RPCs' state as one RPC (HandleRpc).
  grpc::Status SyncCall(const std::function<void(SyncRpc&)>& call);

  AgentInfo info_;
  JobRunner& runner_;
  std::mutex sync_mu_;
  std::unique_ptr<SyncRpc> sync_;
  ActivityTracker& activity_;
  std::function<void(bool handover)> on_shutdown_;
  std::atomic<bool> shutting_down_{false};
};

// The paths matching /dev/accel* and /dev/vfio/*, sorted.
std::vector<std::string> AcceleratorDevices();

}  // namespace podrun::agent
