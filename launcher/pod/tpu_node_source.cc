// The Cloud TPU node as a pod source (pod_source.h): the existing tpu_* functions behind the
// PodSource interface. Worker i is the node's networkEndpoints[i], whose TPU worker number is i.
#include <fmt/format.h>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {

std::unique_ptr<PodSource> MakeTpuNodeSource(const TpuQuery& query,
                                             const std::filesystem::path& cache_dir);

namespace {

class TpuNodeSource final : public PodSource {
 public:
  TpuNodeSource(TpuQuery query, std::filesystem::path cache_dir)
      : query_(std::move(query)), cache_dir_(std::move(cache_dir)) {
    CheckTpuQuery(query_);
  }

  std::string What() const override { return DescribeTpuQuery(query_); }

  SourceState Describe(bool refresh, bool* from_cache) override {
    return SourceStateOfNode(query_, DescribeTpuNode(query_, cache_dir_, refresh, from_cache));
  }

  void RememberWorkerNumbers(const std::map<std::string, int>&) override {}

  void ForgetCache() override { ForgetCachedTpuNode(query_, cache_dir_); }

  SourceNow Now() override {
    SourceNow now;
    now.ref = {PodSourceKind::kTpuNode, query_};
    const std::optional<TpuNode> node = FindTpuNode(query_);
    std::optional<QueuedResource> qr;
    // A missing node may be waiting in its queued resource; a queued node's resource may have
    // ended (SUSPENDED) while the node still reads otherwise.
    if (!node || !node->queued_resource.empty()) qr = FindQueuedResource(query_);
    ForgetCache();  // a later discovery asks afresh too
    if (!node && !qr) {
      now.condition = SourceCondition::kGone;
      now.state = "deleted";
      now.why = fmt::format("TPU node {} no longer exists", query_.name);
      return now;
    }
    if (NeedsRecreation(node, qr)) {
      now.condition = SourceCondition::kPreempted;
      now.state = node && IsNodeGone(node->state) ? node->state : qr->state;
    } else if (node && node->state == "READY") {
      now.condition = SourceCondition::kReady;
      now.state = "READY";
      return now;
    } else {
      now.condition = SourceCondition::kBusy;
      now.state = node ? (node->state.empty() ? "in no state" : node->state) : qr->state;
      now.deleting = now.state == "DELETING";
      now.why = fmt::format("TPU node {} is {}, not READY", query_.name, now.state);
      return now;
    }
    now.why = fmt::format("TPU node {} is {}", query_.name, now.state);
    return now;
  }

  void Create(const TpuCreate& create) override {
    RunGcloud(create.queued ? GcloudCreateQueuedCommand(query_, create)
                            : GcloudCreateNodeCommand(query_, create),
              What());
  }

  bool Delete(DeleteScope) override {
    if (FindQueuedResource(query_)) {
      RunGcloud(GcloudDeleteQueuedCommand(query_), What());
      return true;
    }
    return RunGcloudUnlessNotFound(GcloudDeleteNodeCommand(query_), What()).has_value();
  }

  TpuHostKeys PublishedHostKeys(const SourceState&) override {
    // By worker id, which is the endpoint's place in the node's answer (SourceStateOfNode).
    return ParseTpuHostKeys(RunGcloud(GcloudGuestAttributesCommand(query_), What()), What());
  }

 private:
  const TpuQuery query_;
  const std::filesystem::path cache_dir_;
};

}  // namespace

SourceState SourceStateOfNode(const TpuQuery& query, const TpuNode& node) {
  SourceState out;
  out.project = node.project;
  out.state = node.state;
  if (node.state != "READY") {
    out.not_ready = fmt::format("tpu {} is {}, not READY", query.name,
                                node.state.empty() ? "in no state" : node.state);
  }
  for (size_t i = 0; i < node.endpoints.size(); ++i) {
    SourceWorker w;
    w.internal_ip = node.endpoints[i].internal_ip;
    w.external_ip = node.endpoints[i].external_ip;
    w.tpu_worker_number = static_cast<int>(i);
    out.workers.push_back(std::move(w));
  }
  return out;
}

std::unique_ptr<PodSource> MakeTpuNodeSource(const TpuQuery& query,
                                             const std::filesystem::path& cache_dir) {
  return std::make_unique<TpuNodeSource>(query, cache_dir);
}

}  // namespace podrun
