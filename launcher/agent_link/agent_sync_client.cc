// AgentSyncClient's code sync calls (see agent_sync_client.h; docs/design.md decision 11).
#include "launcher/agent_link/agent_sync_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "launcher/agent_link/agent_rpc.h"
#include "launcher/base/error.h"
#include "proto/unique_fd.h"

namespace podrun {

using agent_rpc::Check;
using agent_rpc::SetTimeout;

struct AgentSyncClient::Stub {
  std::unique_ptr<v1::Agent::Stub> stub;
};

namespace {

constexpr size_t kChunk = 1 << 20;  // under gRPC's 4 MiB message limit
constexpr auto kQuickTimeout = std::chrono::seconds(30);
// Bulk transfers and workdir writes: bounded only by what a slow disk or link can need.
constexpr auto kBulkTimeout = std::chrono::minutes(30);

// Sends one blob's chunks; false if the stream broke (the status says why).
bool SendBlob(grpc::ClientWriter<v1::BlobChunk>& writer, const AgentBlob& blob, uint64_t* sent) {
  v1::BlobChunk chunk;
  chunk.set_sha256(blob.sha256);
  if (blob.file.empty()) {
    chunk.set_size(blob.data.size());
    for (size_t at = 0;;) {
      const size_t n = std::min(kChunk, blob.data.size() - at);
      chunk.set_data(blob.data.substr(at, n));
      at += n;
      chunk.set_last(at == blob.data.size());
      if (!writer.Write(chunk)) return false;
      *sent += n;
      if (chunk.last()) return true;
    }
  }
  UniqueFd fd(::open(blob.file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    throw Error(ExitCode::kUsage, fmt::format("sync: {}: {}", blob.file, std::strerror(errno)));
  }
  std::string buffer(kChunk, '\0');
  // Read one chunk ahead, so the last one is marked.
  auto read = [&](std::string* out) {
    ssize_t n;
    do {
      n = ::read(fd.get(), buffer.data(), buffer.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      throw Error(ExitCode::kUsage, fmt::format("sync: {}: {}", blob.file, std::strerror(errno)));
    }
    out->assign(buffer.data(), static_cast<size_t>(n));
  };
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0) chunk.set_size(static_cast<uint64_t>(st.st_size));
  std::string current, next;
  read(&current);
  for (;;) {
    if (!current.empty()) read(&next);
    chunk.set_last(current.empty() || next.empty());
    *sent += current.size();
    chunk.set_data(std::move(current));
    if (!writer.Write(chunk)) return false;
    if (chunk.last()) return true;
    chunk.clear_size();
    current = std::move(next);
    next.clear();
  }
}

}  // namespace

AgentSyncClient::AgentSyncClient(std::shared_ptr<grpc::Channel> channel)
    : stub_(std::make_unique<Stub>(Stub{v1::Agent::NewStub(std::move(channel))})) {}

AgentSyncClient::~AgentSyncClient() = default;

std::vector<std::string> AgentSyncClient::BlobsMissing(const std::vector<std::string>& sha256s) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kQuickTimeout);
  v1::BlobsMissingRequest req;
  for (const std::string& s : sha256s) req.add_sha256(s);
  v1::BlobsMissingReply reply;
  Check(stub_->stub->BlobsMissing(&ctx, req, &reply), "BlobsMissing");
  return {reply.sha256().begin(), reply.sha256().end()};
}

uint64_t AgentSyncClient::PutBlobs(const std::vector<AgentBlob>& blobs) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kBulkTimeout);
  v1::PutBlobsReply reply;
  std::unique_ptr<grpc::ClientWriter<v1::BlobChunk>> writer(stub_->stub->PutBlobs(&ctx, &reply));
  uint64_t sent = 0;
  for (const AgentBlob& blob : blobs) {
    if (!SendBlob(*writer, blob, &sent)) break;  // Finish says why
  }
  writer->WritesDone();
  Check(writer->Finish(), "PutBlobs");
  return sent;
}

uint16_t AgentSyncClient::ServeBlobs(const std::string& address, const std::string& key,
                                     const std::string& manifest_sha256,
                                     std::chrono::seconds lifetime) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kQuickTimeout);
  v1::ServeBlobsRequest req;
  req.set_address(address);
  req.set_key(key);
  req.set_manifest_sha256(manifest_sha256);
  req.set_seconds(static_cast<uint32_t>(lifetime.count()));
  v1::ServeBlobsReply reply;
  Check(stub_->stub->ServeBlobs(&ctx, req, &reply), "ServeBlobs");
  return static_cast<uint16_t>(reply.port());
}

uint64_t AgentSyncClient::FetchBlobs(const std::string& host, uint16_t port, const std::string& key,
                                     const std::string& manifest_sha256) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kBulkTimeout);
  v1::FetchBlobsRequest req;
  req.set_host(host);
  req.set_port(port);
  req.set_key(key);
  req.set_manifest_sha256(manifest_sha256);
  v1::FetchBlobsReply reply;
  Check(stub_->stub->FetchBlobs(&ctx, req, &reply), "FetchBlobs");
  return reply.bytes();
}

uint64_t AgentSyncClient::EndServe(uint16_t port) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kQuickTimeout);
  v1::EndServeRequest req;
  req.set_port(port);
  v1::EndServeReply reply;
  Check(stub_->stub->EndServe(&ctx, req, &reply), "EndServe");
  return reply.bytes_served();
}

AgentSyncApplied AgentSyncClient::ApplySync(const std::string& workdir,
                                            const std::string& manifest_sha256) {
  grpc::ClientContext ctx;
  SetTimeout(ctx, kBulkTimeout);
  v1::ApplySyncRequest req;
  req.set_workdir(workdir);
  req.set_manifest_sha256(manifest_sha256);
  v1::ApplySyncReply reply;
  Check(stub_->stub->ApplySync(&ctx, req, &reply), "ApplySync");
  return {reply.written(), reply.deleted(), reply.unchanged()};
}

}  // namespace podrun
