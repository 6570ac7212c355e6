// Choosing a slice's provisioner by the kind of its source (see provisioner.h).
#include "launcher/recovery/provisioner.h"

#include "launcher/recovery/source_provisioner.h"

namespace podrun {
namespace {

// TpuProvisioner (queued resources, the creating deadline) as a Provisioner.
class TpuNodeProvisioner final : public Provisioner {
 public:
  TpuNodeProvisioner(const TpuQuery& node, TpuCreate create, std::chrono::seconds poll,
                     TpuWait wait, TpuProvisionerOptions options)
      : node_(node), tpu_(node, std::move(create), poll, std::move(wait), std::move(options)) {}

  std::string What() const override { return DescribeTpuQuery(node_); }
  SliceReady Ensure(bool recreate_preempted) override {
    return Of(tpu_.Ensure(recreate_preempted));
  }
  SliceReady Recreate() override { return Of(tpu_.Recreate()); }
  bool Delete() override { return tpu_.Delete(); }

 private:
  SliceReady Of(const TpuNodeReady& ready) const {
    return {SourceStateOfNode(node_, ready.node), ready.action, ready.waited_seconds};
  }

  const TpuQuery node_;
  TpuProvisioner tpu_;
};

}  // namespace

std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& ref, const TpuCreate& create,
                                             const std::filesystem::path& cache_dir,
                                             std::chrono::seconds poll, TpuWait wait,
                                             TpuProvisionerOptions options) {
  if (ref.kind == PodSourceKind::kTpuNode) {
    return std::make_unique<TpuNodeProvisioner>(ref.query, create, poll, std::move(wait),
                                                std::move(options));
  }
  return MakeSourceProvisioner(ref, MakePodSource(ref, cache_dir), create, poll, std::move(wait),
                               std::move(options));
}

}  // namespace podrun
