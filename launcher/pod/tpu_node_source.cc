// The Cloud TPU node as a pod source (pod_source.h): the existing tpu_* functions behind the
// PodSource interface. Worker i is the node's networkEndpoints[i], whose TPU worker number is i.
#include <fmt/format.h>

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
    const TpuNode node = DescribeTpuNode(query_, cache_dir_, refresh, from_cache);
    SourceState out;
    out.project = node.project;
    out.state = node.state;
    if (node.state != "READY") {
      out.not_ready = fmt::format("tpu {} is {}, not READY", query_.name,
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

  void RememberWorkerNumbers(const std::map<std::string, int>&) override {}

  void ForgetCache() override { ForgetCachedTpuNode(query_, cache_dir_); }

  void Create(const TpuCreate& create) override {
    RunGcloud(create.queued ? GcloudCreateQueuedCommand(query_, create)
                            : GcloudCreateNodeCommand(query_, create),
              What());
  }

  void Delete() override {
    RunGcloud(FindQueuedResource(query_) ? GcloudDeleteQueuedCommand(query_)
                                         : GcloudDeleteNodeCommand(query_),
              What());
  }

  TpuHostKeys PublishedHostKeys() override {
    return ParseTpuHostKeys(RunGcloud(GcloudGuestAttributesCommand(query_), What()), What());
  }

 private:
  const TpuQuery query_;
  const std::filesystem::path cache_dir_;
};

}  // namespace

std::unique_ptr<PodSource> MakeTpuNodeSource(const TpuQuery& query,
                                             const std::filesystem::path& cache_dir) {
  return std::make_unique<TpuNodeSource>(query, cache_dir);
}

}  // namespace podrun
