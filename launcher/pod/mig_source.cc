// The Compute Engine managed instance group of TPU VMs as a pod source (pod_source.h): two gcloud
// calls (list-instances, then instances list) give the instances, their states and addresses;
// the answer is cached as podrun's own JSON, with the TPU worker numbers the VMs gave when the
// API does not show them. Creating, deleting and reading published host keys of a MIG slice
// come with provisioning (docs/reference.md, "TPU7x and other Compute Engine slices").
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/pod/mig_instances.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {

std::unique_ptr<PodSource> MakeMigSource(const TpuQuery& query,
                                         const std::filesystem::path& cache_dir);

namespace {

nlohmann::json ToJson(const SourceState& s) {
  nlohmann::json j = {{"project", s.project}, {"workers", nlohmann::json::array()}};
  for (const SourceWorker& w : s.workers) {
    nlohmann::json e = {{"name", w.name}, {"internal_ip", w.internal_ip}, {"state", w.state}};
    if (w.external_ip) e["external_ip"] = *w.external_ip;
    if (w.tpu_worker_number) e["number"] = *w.tpu_worker_number;
    j["workers"].push_back(e);
  }
  return j;
}

// The cached answer; nullopt when it is damaged (then gcloud is asked again).
std::optional<SourceState> FromJson(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    SourceState s;
    s.project = j.at("project").get<std::string>();
    s.state = "RUNNING";
    for (const nlohmann::json& e : j.at("workers")) {
      SourceWorker w;
      w.name = e.at("name").get<std::string>();
      w.internal_ip = e.at("internal_ip").get<std::string>();
      w.state = e.at("state").get<std::string>();
      if (e.contains("external_ip")) w.external_ip = e["external_ip"].get<std::string>();
      if (e.contains("number")) w.tpu_worker_number = e["number"].get<int>();
      s.workers.push_back(std::move(w));
    }
    if (s.workers.empty()) return std::nullopt;
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

// In TPU worker order when every number is known and they are 0..n-1 (else as given).
void SortByWorkerNumber(std::vector<SourceWorker>* workers) {
  std::vector<SourceWorker> sorted(workers->size());
  for (SourceWorker& w : *workers) {
    if (!w.tpu_worker_number || *w.tpu_worker_number >= static_cast<int>(workers->size()) ||
        !sorted[*w.tpu_worker_number].internal_ip.empty()) {
      for (SourceWorker& x : *workers) x.tpu_worker_number.reset();  // the VMs will say
      return;
    }
    sorted[*w.tpu_worker_number] = w;
  }
  *workers = std::move(sorted);
}

class MigSource final : public PodSource {
 public:
  MigSource(TpuQuery query, std::filesystem::path cache_dir)
      : query_(std::move(query)), cache_dir_(std::move(cache_dir)) {
    CheckTpuQuery(query_);
    cache_ = cache_dir_ / fmt::format("mig-{}-{}-{}.json", query_.project.value_or("default"),
                                      query_.zone, query_.name);
  }

  std::string What() const override {
    return fmt::format("mig {} (zone {}{})", query_.name, query_.zone,
                       query_.project ? ", project " + *query_.project : std::string());
  }

  SourceState Describe(bool refresh, bool* from_cache) override {
    if (from_cache != nullptr) *from_cache = false;
    if (!refresh) {
      std::error_code ec;
      const auto written = std::filesystem::last_write_time(cache_, ec);
      if (!ec && std::filesystem::file_time_type::clock::now() - written < kTpuCacheTtl) {
        std::ifstream in(cache_);
        std::stringstream text;
        text << in.rdbuf();
        if (std::optional<SourceState> cached = FromJson(text.str())) {
          if (from_cache != nullptr) *from_cache = true;
          return *cached;
        }
      }
    }
    const std::string what = What();
    const std::vector<ManagedInstance> instances =
        ParseManagedInstances(RunGcloud(GcloudMigListInstancesCommand(query_), what), what);
    SourceState out;
    out.not_ready = MigNotReady(query_.name, instances);
    out.state = out.not_ready.empty() ? "RUNNING" : "NOT_READY";
    if (!out.not_ready.empty()) return out;
    std::vector<std::string> names;
    for (const ManagedInstance& m : instances) names.push_back(m.name);
    out.workers = ParseMigInstances(RunGcloud(GcloudMigInstancesCommand(query_, names), what),
                                    instances, what, &out.project);
    // Between the two calls an instance may have stopped.
    for (const SourceWorker& w : out.workers) {
      if (w.state != "RUNNING") {
        out.not_ready = fmt::format("mig {}: instance {} is {}, not RUNNING", query_.name, w.name,
                                    w.state.empty() ? "in no state" : w.state);
        out.state = "NOT_READY";
        return out;
      }
    }
    SortByWorkerNumber(&out.workers);
    Store(out);
    return out;
  }

  void RememberWorkerNumbers(const std::map<std::string, int>& numbers) override {
    std::ifstream in(cache_);
    std::stringstream text;
    text << in.rdbuf();
    std::optional<SourceState> cached = FromJson(text.str());
    if (!cached) return;
    for (SourceWorker& w : cached->workers) {
      if (auto it = numbers.find(w.name); it != numbers.end()) w.tpu_worker_number = it->second;
    }
    SortByWorkerNumber(&cached->workers);
    Store(*cached);
  }

  void ForgetCache() override {
    std::error_code ec;
    std::filesystem::remove(cache_, ec);
  }

  void Create(const TpuCreate&) override { throw NotYet("creating"); }
  void Delete() override { throw NotYet("deleting"); }
  TpuHostKeys PublishedHostKeys() override { return {}; }  // none read yet: first contact

 private:
  Error NotYet(const char* verb) const {
    return UsageError(
        fmt::format("{}: {} a MIG slice is not supported by this podrun yet; make "
                    "it with gcloud (docs/reference.md, \"TPU7x and other Compute "
                    "Engine slices\")",
                    What(), verb));
  }

  void Store(const SourceState& s) const {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    const std::filesystem::path tmp = cache_.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << ToJson(s).dump();
    }
    std::filesystem::rename(tmp, cache_, ec);
  }

  const TpuQuery query_;
  const std::filesystem::path cache_dir_;
  std::filesystem::path cache_;
};

}  // namespace

std::unique_ptr<PodSource> MakeMigSource(const TpuQuery& query,
                                         const std::filesystem::path& cache_dir) {
  return std::make_unique<MigSource>(query, cache_dir);
}

}  // namespace podrun
