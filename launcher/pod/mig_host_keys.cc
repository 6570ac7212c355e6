// Reading a MIG slice's published host keys (see mig_host_keys.h).
#include "launcher/pod/mig_host_keys.h"

#include <exception>
#include <mutex>

#include "launcher/base/parallel_for.h"
#include "launcher/pod/gcloud_run.h"
#include "launcher/pod/mig_gcloud.h"

namespace podrun {
namespace {

// gcloud processes at once: each is a Python start-up (about a second, mostly CPU).
constexpr size_t kAtOnce = 8;

}  // namespace

TpuHostKeys ReadHostKeys(const SliceRef& mig, const std::string& what,
                         const std::vector<SourceWorker>& workers) {
  TpuHostKeys out;
  std::mutex mutex;
  std::exception_ptr failed;
  ParallelFor(
      workers.size(),
      [&](size_t i) {
        const SourceWorker& w = workers[i];
        try {
          // A VM that has not published yet has no `hostkeys/` path: gcloud says NOT_FOUND.
          const std::optional<std::string> json =
              RunGcloudUnlessNotFound(GcloudMigHostKeysCommand(mig, w.name), what);
          if (!json) return;
          std::vector<PublishedHostKey> keys;
          for (auto& [worker, list] : ParseTpuHostKeys(*json, what + " instance " + w.name)) {
            keys.insert(keys.end(), list.begin(), list.end());
          }
          if (keys.size() > kMaxHostKeysPerWorker) keys.resize(kMaxHostKeysPerWorker);
          std::lock_guard lock(mutex);
          if (!keys.empty()) out[static_cast<int>(i)] = std::move(keys);
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!failed) failed = std::current_exception();
        }
      },
      kAtOnce);
  if (failed) std::rethrow_exception(failed);
  return out;
}

}  // namespace podrun
