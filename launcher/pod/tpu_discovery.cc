// Cloud TPU discovery through gcloud (see tpu_discovery.h).
#include "launcher/pod/tpu_discovery.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "launcher/base/atomic_file.h"
#include "launcher/base/error.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/pod/tpu_reads.h"

namespace podrun {
namespace {

// Checked first: no name can leave `dir` or be read as an option.
std::filesystem::path CacheFile(const std::filesystem::path& dir, const SliceRef& q) {
  CheckSliceRef(q);
  return dir / fmt::format("tpu-{}-{}-{}.json", q.project.value_or("default"), q.zone, q.name);
}

std::string Describe(const SliceRef& q) {
  return fmt::format("tpu {} (zone {}{})", q.name, q.zone,
                     q.project ? ", project " + *q.project : std::string());
}

}  // namespace

std::vector<std::string> GcloudDescribeCommand(const SliceRef& q) {
  CheckSliceRef(q);
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",   "tpu-vm",
                                   "describe",      q.name,    "--zone", q.zone};
  if (q.project) {
    argv.push_back("--project");
    argv.push_back(*q.project);
  }
  argv.push_back("--format=json");
  return argv;
}

void ForgetCachedTpuNode(const SliceRef& query, const std::filesystem::path& cache_dir) {
  std::error_code ec;
  std::filesystem::remove(CacheFile(cache_dir, query), ec);
}

TpuNode DescribeTpuNode(const SliceRef& query, const std::filesystem::path& cache_dir, bool refresh,
                        bool* from_cache) {
  if (from_cache != nullptr) *from_cache = false;
  const std::string what = Describe(query);
  const std::filesystem::path cache = CacheFile(cache_dir, query);
  std::error_code ec;
  if (!refresh) {
    const auto written = std::filesystem::last_write_time(cache, ec);
    if (!ec && std::filesystem::file_time_type::clock::now() - written < kSliceCacheTtl) {
      std::ifstream in(cache);
      std::stringstream text;
      text << in.rdbuf();
      try {
        TpuNode node = ParseTpuNode(text.str(), what);
        if (node.state == "READY") {
          if (from_cache != nullptr) *from_cache = true;
          return node;
        }
      } catch (const Error&) {  // a damaged cache entry: ask again
      }
    }
  }
  // tpu_reads.h: through the API or gcloud, within a deadline, the failure typed.
  const std::string answer = ReadExistingTpuNode(query, what);
  TpuNode node = ParseTpuNode(answer, what);
  if (node.state == "READY") {
    std::filesystem::create_directories(cache_dir, ec);
    try {
      WriteFileAtomically(cache, answer, 0600);
    } catch (const Error&) {
      // Not cached: the next command asks gcloud again.
    }
  }
  return node;
}

}  // namespace podrun
