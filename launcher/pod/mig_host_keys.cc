// Reading a MIG slice's published host keys (see mig_host_keys.h).
#include "launcher/pod/mig_host_keys.h"

#include <fmt/format.h>

#include <exception>
#include <functional>
#include <mutex>

#include "launcher/base/parallel_for.h"
#include "launcher/pod/cloud_api_get.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {
namespace {

// gcloud processes at once: each is a Python start-up (about a second, mostly CPU).
constexpr size_t kGcloudsAtOnce = 8;
// The API's GETs at once (each a thread waiting on the network).
constexpr size_t kGetsAtOnce = 32;

// The keys of each VM, read by `read` (the JSON of its guest attributes `hostkeys/`, nullopt when
// it has published none yet), `at_once` VMs at a time.
TpuHostKeys ReadEach(const std::string& what, const std::vector<SourceWorker>& workers,
                     size_t at_once,
                     const std::function<std::optional<std::string>(const SourceWorker&)>& read) {
  TpuHostKeys out;
  std::mutex mutex;
  std::exception_ptr failed;
  ParallelFor(
      workers.size(),
      [&](size_t i) {
        const SourceWorker& w = workers[i];
        try {
          const std::optional<std::string> json = read(w);
          if (!json) return;
          std::vector<PublishedHostKey> keys;
          // The API's answer is one GuestAttributes; gcloud prints a list of items.
          const std::string list = json->starts_with('{') ? "[" + *json + "]" : *json;
          for (auto& [worker, found] : ParseTpuHostKeys(list, what + " instance " + w.name)) {
            keys.insert(keys.end(), found.begin(), found.end());
          }
          if (keys.size() > kMaxHostKeysPerWorker) keys.resize(kMaxHostKeysPerWorker);
          std::lock_guard lock(mutex);
          if (!keys.empty()) out[static_cast<int>(i)] = std::move(keys);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!failed) failed = std::current_exception();
        }
      },
      at_once);
  if (failed) std::rethrow_exception(failed);
  return out;
}

}  // namespace

TpuHostKeys ReadHostKeys(const SliceRef& mig, const std::string& what,
                         const std::vector<SourceWorker>& workers) {
  for (const SourceWorker& w : workers) {
    if (std::string problem = TpuNodeNameProblem(w.name); !problem.empty()) {
      throw UsageError(fmt::format("{}: instance name '{}': {}", what, w.name, problem));
    }
  }
  return ThroughApiElseGcloud<TpuHostKeys>(
      CloudApi::kCompute, mig.project,
      [&](const CloudApiAccess& access, const std::string& project) {
        return ReadEach(what, workers, kGetsAtOnce, [&](const SourceWorker& w) {
          // A VM that has not published yet has no `hostkeys/` path: the API answers 404, or
          // an empty queryValue.
          return CloudApiGet(access, CloudApi::kCompute,
                             fmt::format("projects/{}/zones/{}/instances/{}/"
                                         "getGuestAttributes?queryPath=hostkeys%2F",
                                         project, mig.zone, w.name),
                             what);
        });
      },
      [&] {
        return ReadEach(what, workers, kGcloudsAtOnce, [&](const SourceWorker& w) {
          return RunGcloudUnlessNotFound(GcloudMigHostKeysCommand(mig, w.name), what);
        });
      });
}

}  // namespace podrun
