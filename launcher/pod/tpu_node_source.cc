// The Cloud TPU node as a pod source (pod_source.h): the existing tpu_* functions behind the
// PodSource interface. Worker i is the node's networkEndpoints[i], whose TPU worker number is i.
#include <fmt/format.h>

#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/pod/tpu_reads.h"

namespace podrun {

std::unique_ptr<PodSource> MakeTpuNodeSource(const SliceRef& query,
                                             const std::filesystem::path& cache_dir);

namespace {

class TpuNodeSource final : public PodSource {
 public:
  TpuNodeSource(SliceRef query, std::filesystem::path cache_dir)
      : query_(std::move(query)), cache_dir_(std::move(cache_dir)) {
    CheckSliceRef(query_);
  }

  std::string What() const override { return DescribeSliceRef(query_); }

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
      now.failed = qr && qr->state == "FAILED";
    } else if (node && node->state == "READY") {
      now.condition = SourceCondition::kReady;
      now.state = "READY";
      return now;
    } else {
      now.condition = SourceCondition::kBusy;
      now.state = node ? (node->state.empty() ? "in no state" : node->state) : qr->state;
      now.deleting = now.state == "DELETING";
      // A queued resource ACTIVE whose node is not listed yet is still making it.
      if (now.state == "ACTIVE") now.state = "PROVISIONING";
      now.creating = now.state == "CREATING" || now.state == "PROVISIONING";
      now.why = node ? fmt::format("TPU node {} is {}, not READY", query_.name, now.state)
                     : fmt::format("queued resource {} is {}, no node yet", query_.name, now.state);
      return now;
    }
    now.why = node && IsNodeGone(node->state)
                  ? fmt::format("TPU node {} is {}", query_.name, now.state)
                  : fmt::format("queued resource {} is {}", query_.name, now.state);
    return now;
  }

  void Create(const TpuCreate& create) override {
    RunGcloud(create.queued ? GcloudCreateQueuedCommand(query_, create)
                            : GcloudCreateNodeCommand(query_, create),
              What());
  }

  // The queued resource with its node (--force), then a node made without one. Asked again after
  // a transient failure, a delete that went through reads NOT_FOUND: nothing is left either way.
  bool Delete(DeleteScope) override {
    ForgetCache();
    bool deleted = false;
    if (FindQueuedResource(query_)) {
      deleted = RunGcloudUnlessNotFound(GcloudDeleteQueuedCommand(query_), What()).has_value();
    }
    if (!deleted || FindTpuNode(query_)) {
      deleted =
          RunGcloudUnlessNotFound(GcloudDeleteNodeCommand(query_), What()).has_value() || deleted;
    }
    return deleted;
  }

  std::string DiffersFrom(const TpuCreate& create) override {
    const std::optional<TpuNode> node = FindTpuNode(query_);
    if (!node || (node->accelerator_type == create.accelerator_type &&
                  (node->runtime_version.empty() || node->runtime_version == create.version))) {
      return "";
    }
    return fmt::format(
        "{} exists as {}, {}; the spec's create: asks for {}, {}: podrun does not "
        "replace it (delete it with podrun down, or change create:)",
        What(), node->accelerator_type, node->runtime_version, create.accelerator_type,
        create.version);
  }

  TpuHostKeys PublishedHostKeys(const SourceState&) override {
    // By worker id, which is the endpoint's place in the node's answer (SourceStateOfNode).
    return ParseTpuHostKeys(ReadTpuGuestAttributes(query_, What()), What());
  }

 private:
  const SliceRef query_;
  const std::filesystem::path cache_dir_;
};

}  // namespace

SourceState SourceStateOfNode(const SliceRef& query, const TpuNode& node) {
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

std::unique_ptr<PodSource> MakeTpuNodeSource(const SliceRef& query,
                                             const std::filesystem::path& cache_dir) {
  return std::make_unique<TpuNodeSource>(query, cache_dir);
}

}  // namespace podrun
