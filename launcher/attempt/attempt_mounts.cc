// An attempt's mounts phase: the spec's `mounts:` on every worker before setup, the workers
// that serve an nfs export first.
#include "launcher/job/attempt_runner_parts.h"
#include "launcher/job/mount_request.h"

namespace podrun::attempt_internal {

void Runner::MountAll() {
  if (plan_.spec.mounts.empty()) return;
  const auto began = Clock::now();
  const std::vector<std::string> addresses = WorkerAddresses();
  const std::vector<int> servers = NfsServers(plan_.spec.mounts, plan_.pod.workers.size());
  Say(fmt::format("mounts on {} worker{}", workers_.size(), workers_.size() == 1 ? "" : "s"));
  BeginProgress("mounts");
  auto mount = [&](Worker& w) {
    if (!w.error.empty()) return;
    try {
      for (const std::string& action :
           Client(w)->Mount(MountRequestFor(plan_.spec.mounts, w.index, addresses))) {
        Say(fmt::format("{}: {}", w.link->description(), action));
      }
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: {}", w.link->description(), e.what());
    }
    Progressed(w.index);
  };
  auto serves = [&](const Worker& w) {
    return std::find(servers.begin(), servers.end(), w.index) != servers.end();
  };
  std::vector<std::unique_ptr<Worker>>& all = workers_;
  ForEachParallel(all, [&](Worker& w) {
    if (serves(w)) mount(w);
  });
  const bool servers_ok = std::all_of(
      all.begin(), all.end(), [&](const auto& w) { return !serves(*w) || w->error.empty(); });
  ForEachParallel(all, [&](Worker& w) {
    if (serves(w)) return;
    if (!servers_ok) {
      w.error =
          fmt::format("{}: mounts: not attempted (the nfs server failed)", w.link->description());
      return;
    }
    mount(w);
  });
  Say(fmt::format("mounts done in {:.2f} s", SecondsSince(began)));
}

}  // namespace podrun::attempt_internal
