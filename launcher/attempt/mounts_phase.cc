// An attempt's mounts phase, the nfs servers first (see mounts_phase.h).
#include "launcher/attempt/mounts_phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "launcher/attempt/run_request.h"
#include "launcher/output/say.h"
#include "launcher/spec/mount_request.h"

namespace podrun {

void MountsPhase::Run(PhaseProgress& progress) {
  if (plan_.spec.mounts.empty()) return;
  const auto began = std::chrono::steady_clock::now();
  const std::vector<std::string> addresses = WorkerAddresses(plan_, workers_);
  const std::vector<int> servers = NfsServers(plan_.spec.mounts, plan_.pod.workers.size());
  Say(fmt::format("mounts on {} worker{}", workers_.size(), workers_.size() == 1 ? "" : "s"));
  progress.Begin("mounts");
  auto mount = [&](AttemptWorker& w) {
    if (!w.error.empty()) return;
    try {
      for (const std::string& action :
           w.client()->Mount(MountRequestFor(plan_.spec.mounts, w.index, addresses))) {
        Say(fmt::format("{}: {}", w.description(), action));
      }
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: {}", w.description(), e.what());
    }
    progress.Done(w.index);
  };
  auto serves = [&](const AttemptWorker& w) {
    return std::find(servers.begin(), servers.end(), w.index) != servers.end();
  };
  auto& all = workers_.all();
  workers_.ForEach([&](AttemptWorker& w) {
    if (serves(w)) mount(w);
  });
  const bool servers_ok = std::all_of(
      all.begin(), all.end(), [&](const auto& w) { return !serves(*w) || w->error.empty(); });
  workers_.ForEach([&](AttemptWorker& w) {
    if (serves(w)) return;
    if (!servers_ok) {
      w.error = fmt::format("{}: mounts: not attempted (the nfs server failed)", w.description());
      return;
    }
    mount(w);
  });
  Say(fmt::format("mounts done in {:.2f} s", SecondsSince(began)));
}

}  // namespace podrun
