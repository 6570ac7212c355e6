// An attempt's sync phase: the manifest, the blobs sent and relayed, the workdirs brought to it
// (see sync_phase.h).
#include "launcher/attempt/sync_phase.h"

#include <fmt/format.h>
#include <openssl/rand.h>

#include <algorithm>
#include <atomic>

#include "launcher/attempt/run_request.h"
#include "launcher/output/say.h"
#include "launcher/sync/manifest.h"
#include "launcher/sync/relay_tree.h"
#include "proto/sha256.h"

namespace podrun {
namespace {

constexpr int kRelayFanout = 4;  // children per serving worker
constexpr auto kServeFor = std::chrono::minutes(30);

// "12.3 MB", or "42 kB" below a tenth of a megabyte.
std::string Megabytes(uint64_t bytes) {
  if (bytes < 100000) return fmt::format("{} kB", (bytes + 999) / 1000);
  return fmt::format("{:.1f} MB", static_cast<double>(bytes) / 1e6);
}

std::string RandomKey() {
  std::string key(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), 32) != 1) {
    throw Error(ExitCode::kUnreachable, "sync: no random bytes for the peer key (OpenSSL)");
  }
  return key;
}

}  // namespace

bool SyncPhase::BuildManifest() {
  if (plan_.spec.sync.empty()) return true;
  try {
    manifest_ = podrun::BuildManifest(SyncDirectory(plan_.spec));  // sync/manifest.h, not this
    return true;
  } catch (const std::exception& e) {
    Say(fmt::format("{}: sync: {}", plan_.spec.path, e.what()));
    return false;
  }
}

void SyncPhase::Run(PhaseProgress& progress) {
  if (!manifest_) return;
  const auto began = std::chrono::steady_clock::now();
  const std::filesystem::path root = SyncDirectory(plan_.spec);
  const Manifest& manifest = *manifest_;
  AgentBlob manifest_blob;
  manifest_blob.data = SerializeManifest(manifest);
  manifest_blob.sha256 = Sha256Hex(manifest_blob.data);
  const std::string& manifest_sha = manifest_blob.sha256;
  // Every content blob, by hash (a file's content appears once however many files have it).
  std::map<std::string, std::string> files;
  for (const ManifestFile& f : manifest.files) {
    if (f.symlink.empty()) files.emplace(f.sha256, (root / f.path).string());
  }
  std::vector<AttemptWorker*> live;
  for (auto& w : workers_.all()) {
    if (w->error.empty()) live.push_back(w.get());
  }
  if (live.empty()) return;
  Say(fmt::format("sync {} ({} file{}, {}) to {} worker{}", root.string(), manifest.files.size(),
                  manifest.files.size() == 1 ? "" : "s", Megabytes(manifest.bytes), live.size(),
                  live.size() == 1 ? "" : "s"));
  progress.Begin("sync");
  progress.SetDetail(Megabytes(manifest.bytes));

  // Sends what `w` lacks through its own connection; returns the bytes sent.
  auto send_direct = [&](AttemptWorker& w) -> uint64_t {
    std::vector<std::string> wanted;
    wanted.reserve(files.size() + 1);
    for (const auto& [sha, file] : files) wanted.push_back(sha);
    wanted.push_back(manifest_sha);  // last: a cached manifest means its blobs came first
    std::vector<AgentBlob> blobs;
    for (const std::string& sha : w.client()->sync().BlobsMissing(wanted)) {
      if (sha == manifest_sha) {
        blobs.push_back(manifest_blob);
      } else {
        blobs.push_back(AgentBlob{sha, files.at(sha), {}});
      }
    }
    return blobs.empty() ? 0 : w.client()->sync().PutBlobs(blobs);
  };
  std::atomic<uint64_t> uplink{0}, relayed{0};
  std::atomic<int> direct_fallbacks{0};
  std::mutex fallback_mu;
  std::string first_relay_error;

  // The root gets everything through the launcher; then each level of the tree fetches from
  // the level above, whose members serve while their children fetch.
  const RelayTree tree = MakeRelayTree(live.size(), kRelayFanout);
  const std::vector<std::string> addresses = WorkerAddresses(plan_, workers_);
  const std::string key = RandomKey();
  std::vector<uint16_t> ports(live.size(), 0);  // per position: its listener, 0 if none
  auto address_of = [&](const AttemptWorker& w) {
    return addresses.at(static_cast<size_t>(w.index));
  };
  try {
    uplink += send_direct(*live[0]);
  } catch (const std::exception& e) {
    live[0]->error = fmt::format("{}: sync: {}", live[0]->description(), e.what());
  }
  for (size_t level = 1; level < tree.levels.size(); ++level) {
    // The parents of this level open their listeners.
    // Positions in `live` (the tree's numbering), so each worker's slots are found directly.
    std::vector<size_t> parents;
    for (int p : tree.levels[level - 1]) {
      const auto at = static_cast<size_t>(p);
      if (at * kRelayFanout + 1 < live.size() && live[at]->error.empty()) parents.push_back(at);
    }
    ParallelFor(parents.size(), [&](size_t i) {
      const size_t p = parents[i];
      AttemptWorker& w = *live[p];
      try {
        ports[p] = w.client()->sync().ServeBlobs(address_of(w), key, manifest_sha, kServeFor);
      } catch (const std::exception& e) {
        std::lock_guard lock(fallback_mu);
        if (first_relay_error.empty()) {
          first_relay_error = fmt::format("{} cannot serve: {}", w.description(), e.what());
        }
      }
    });
    const std::vector<int>& children = tree.levels[level];
    ParallelFor(children.size(), [&](size_t i) {
      const auto p = static_cast<size_t>(children[i]);
      AttemptWorker& w = *live[p];
      if (!w.error.empty()) return;
      const size_t parent = static_cast<size_t>(tree.parent[p]);
      try {
        if (ports[parent] != 0 && live[parent]->error.empty()) {
          try {
            relayed += w.client()->sync().FetchBlobs(address_of(*live[parent]), ports[parent], key,
                                                     manifest_sha);
            return;
          } catch (const std::exception& e) {
            std::lock_guard lock(fallback_mu);
            if (first_relay_error.empty()) {
              first_relay_error = fmt::format("{} from {}: {}", w.description(),
                                              live[parent]->description(), e.what());
            }
          }
        }
        ++direct_fallbacks;
        uplink += send_direct(w);
      } catch (const std::exception& e) {
        w.error = fmt::format("{}: sync: {}", w.description(), e.what());
      }
    });
  }
  std::vector<size_t> serving;
  for (size_t p = 0; p < live.size(); ++p) {
    if (ports[p] != 0) serving.push_back(p);
  }
  ParallelFor(serving.size(), [&](size_t i) {
    const size_t p = serving[i];
    try {
      live[p]->client()->sync().EndServe(ports[p]);
    } catch (const std::exception&) {
      // It closes by itself when its time is up.
    }
  });
  if (direct_fallbacks > 0) {
    Say(
        fmt::format("sync: {} worker{} could not fetch from a peer ({}); sent to {} through "
                    "their own connection{}",
                    direct_fallbacks.load(), direct_fallbacks == 1 ? "" : "s", first_relay_error,
                    direct_fallbacks == 1 ? "it" : "them", direct_fallbacks == 1 ? "" : "s"));
  }

  std::atomic<uint64_t> written{0}, deleted{0}, unchanged{0};
  ParallelFor(live.size(), [&](size_t i) {
    AttemptWorker& w = *live[i];
    if (!w.error.empty()) return;
    try {
      AgentSyncApplied applied;
      try {
        applied = w.client()->sync().ApplySync(plan_.spec.workdir, manifest_sha);
      } catch (const AgentRefusal&) {
        throw;
      } catch (const std::exception& e) {
        // Its agent died (a serving parent killed while peers fetched): the blobs are on its
        // disk, so a new agent applies them.
        Say(fmt::format("{}: sync: {}; connecting to a new agent", w.description(), e.what()));
        applied = w.Reconnect()->sync().ApplySync(plan_.spec.workdir, manifest_sha);
      }
      written += applied.written;
      deleted += applied.deleted;
      unchanged += applied.unchanged;
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: sync: {}", w.description(), e.what());
    }
    progress.Done(w.index);
  });
  Say(
      fmt::format("sync done in {:.2f} s: {} sent from here, {} relayed between workers; "
                  "{} files written, {} deleted, {} unchanged",
                  SecondsSince(began), Megabytes(uplink), Megabytes(relayed), written.load(),
                  deleted.load(), unchanged.load()));
}

}  // namespace podrun
