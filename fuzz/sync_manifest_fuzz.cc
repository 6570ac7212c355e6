// Fuzzes applying a sync manifest (worker/sync/workdir_sync.h) with fuzzer-chosen paths, symlinks
// and modes, twice (the second run deletes and replaces what the first wrote): whatever the
// manifest says, nothing is written outside the workdir. The input is one entry per line,
// "<kind><mode> <path>": kind 'f' a file (content "x", in the cache), 'l' a symlink to a target
// chosen by the mode byte from a fixed set (inside, to the outside, to the parent), '-' ends the
// first manifest. The workdir lies 64 levels below a private root and paths are at most 190
// bytes, so even a path that climbed would land inside the root, where it is found.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>

#include "worker/base/agent_error.h"
#include "worker/sync/blob_cache.h"
#include "worker/sync/workdir_sync.h"

namespace fs = std::filesystem;
using podrun::agent::AgentError;

namespace {

constexpr int kDepth = 64;
constexpr size_t kMaxPath = 190;

const fs::path& Root() {
  static const fs::path root = [] {
    fs::path r = fs::temp_directory_path() / ("sync-manifest-fuzz." + std::to_string(::getpid()));
    fs::remove_all(r);
    return r;
  }();
  // Removed at exit (libFuzzer and the replay both exit through exit()).
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(root, ignored);
    }
  } cleanup;
  return root;
}

fs::path Workdir() {
  fs::path p = Root();
  for (int i = 0; i < kDepth; ++i) p /= "d";
  return p / "work";
}

// True if anything but the chain of "d" directories, the workdir, the cache and the state is
// under the root: something was written outside the workdir.
bool WroteOutside() {
  fs::path level = Root();
  for (int i = 0; i <= kDepth; ++i) {
    for (const auto& entry : fs::directory_iterator(level)) {
      const std::string name = entry.path().filename().string();
      const bool expected = (i == 0 && (name == "blobs" || name == "state")) ||
                            (i < kDepth && name == "d") || (i == kDepth && name == "work");
      if (!expected) return true;
    }
    level /= "d";
  }
  return false;
}

std::string SymlinkTarget(unsigned char choice) {
  switch (choice % 6) {
    case 0:
      return "sub";
    case 1:
      return ".";
    case 2:
      return "..";
    case 3:
      return "../outside";
    case 4:
      return (Root() / "outside").string();
    default:
      return "/";
  }
}

// The manifests the input describes: entries before a '-' line, and all entries.
void Parse(std::string_view text, podrun::agent::v1::SyncManifest* first,
           podrun::agent::v1::SyncManifest* second, const std::string& sha) {
  std::istringstream in{std::string(text)};
  bool in_first = true;
  for (std::string line; std::getline(in, line);) {
    if (line == "-") {
      in_first = false;
      continue;
    }
    if (line.size() < 3 || line[2] != ' ') continue;
    podrun::agent::v1::ManifestEntry e;
    e.set_path(line.substr(3, kMaxPath));
    e.set_mode(static_cast<unsigned char>(line[1]) | 0600u);
    if (line[0] == 'l') {
      e.set_symlink(SymlinkTarget(static_cast<unsigned char>(line[1])));
      e.set_size(e.symlink().size());
    } else {
      e.set_sha256(sha);
      e.set_size(1);
    }
    if (in_first) *first->add_entries() = e;
    *second->add_entries() = e;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fs::create_directories(Workdir());
  const podrun::agent::BlobCache cache(Root() / "blobs");
  const std::string sha = cache.Put("x");
  podrun::agent::v1::SyncManifest first, second;
  Parse(std::string_view(reinterpret_cast<const char*>(data), size), &first, &second, sha);
  for (const podrun::agent::v1::SyncManifest* manifest : {&first, &second}) {
    try {
      podrun::agent::ApplyManifest(cache, *manifest, Workdir(), Root() / "state");
    } catch (const AgentError&) {
      // A manifest refused, or a path that could not be written: the documented error path.
    }
    if (WroteOutside()) __builtin_trap();
  }
  fs::remove_all(Workdir());
  fs::remove(Root() / "state");
  return 0;
}
