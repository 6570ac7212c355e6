// The Compute Engine managed instance group of TPU VMs as a pod source (pod_source.h): two reads
// (list-instances, then instances list: mig_reads.h) give the instances, states and addresses;
// the answer is cached as podrun's own JSON, with the TPU worker numbers the VMs gave when the
// API does not show them. A slice is made as Google documents it (mig_gcloud.h: workload
// policy and instance template, mig_parts.h; then the group) and unmade in the reverse order;
// its VMs' published host keys are their guest attributes `hostkeys/` (docs/reference.md, "TPU7x
// and other Compute Engine slices").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "launcher/base/atomic_file.h"
#include "launcher/base/error.h"
#include "launcher/pod/mig_gcloud.h"
#include "launcher/pod/mig_host_keys.h"
#include "launcher/pod/mig_instances.h"
#include "launcher/pod/mig_parts.h"
#include "launcher/pod/mig_reads.h"
#include "launcher/pod/pod_source.h"
#include "launcher/pod/tpu_gcloud.h"
#include "launcher/pod/tpu_names.h"

namespace podrun {

std::unique_ptr<PodSource> MakeMigSource(const SliceRef& query,
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
  MigSource(SliceRef query, std::filesystem::path cache_dir)
      : query_(std::move(query)), cache_dir_(std::move(cache_dir)) {
    CheckSliceRef(query_);
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
      if (!ec && std::filesystem::file_time_type::clock::now() - written < kSliceCacheTtl) {
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
    std::optional<std::string> listed = RecentList();
    if (!listed) listed = ReadMigManagedInstances(query_, what);
    if (!listed) {
      throw GcloudError(
          ExitCode::kUnreachable,
          fmt::format("{}: the managed instance group {} was not found", what, query_.name),
          GcloudFailure::kNotFound);
    }
    const std::vector<ManagedInstance> instances = ParseManagedInstances(*listed, what);
    SourceState out;
    out.not_ready = MigNotReady(query_.name, instances);
    out.state = out.not_ready.empty() ? "RUNNING" : "NOT_READY";
    if (!out.not_ready.empty()) return out;
    std::vector<std::string> names;
    for (const ManagedInstance& m : instances) names.push_back(m.name);
    out.workers = ParseMigInstances(ReadMigVms(query_, names, what), instances, what, &out.project);
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

  SourceNow Now() override {
    SourceNow now;
    now.ref = {PodSourceKind::kMig, query_};
    const std::optional<std::string> text = ReadMigManagedInstances(query_, What());
    ForgetCache();  // a later discovery asks afresh too
    {
      std::lock_guard lock(list_mutex_);
      last_list_ = text;
      last_list_at_ = std::chrono::steady_clock::now();
    }
    if (!text) {
      now.condition = SourceCondition::kGone;
      now.state = "deleted";
      now.why = fmt::format("MIG slice {} no longer exists", query_.name);
      return now;
    }
    ClassifyInstances(ParseManagedInstances(*text, What()), &now);
    return now;
  }

  void Create(const TpuCreate& create) override {
    ForgetRepairs();
    // What this call made, or may have made (a create stopped in flight may have reached the
    // API).
    MigPartsMade parts;
    bool group = false;
    try {
      std::string policy_url = MakeMigParts(query_, What(), create, &parts);
      while (!group) {
        try {
          RunGcloud(GcloudMigGroupCreateCommand(query_, create, policy_url), What());
          group = true;
        } catch (const GcloudError& e) {
          group =
              e.failure() == GcloudFailure::kInterrupted || e.failure() == GcloudFailure::kTimedOut;
          // A template or policy MakeMigParts remembered was deleted since (`down` beside a
          // keeper): asked about, and made, again (then not remembered: once).
          if (e.failure() == GcloudFailure::kNotFound && parts.remembered) {
            ForgetMigParts(query_);
            policy_url = MakeMigParts(query_, What(), create, &parts);
            continue;
          }
          if (e.failure() != GcloudFailure::kExists) throw;
          // Made meanwhile by another podrun (two drivers; `up` beside a launch): theirs, never
          // deleted here; the caller waits for it as for its own. Gone again: the error stands.
          if (!RunGcloudUnlessNotFound(GcloudMigGroupDescribeCommand(query_), What())) throw;
          return;
        }
      }
      if (MigProvisioningOf(create) == "flex_start") {
        RunGcloud(GcloudMigResizeRequestCommand(query_, create), What());
      }
    } catch (const Error& e) {
      // Nothing this call made stays half made (the group first, then its template and policy);
      // what it did not make (another podrun's group, parts reused) stays.
      try {
        if (group) {
          RunGcloudUnlessNotFound(GcloudMigGroupDeleteCommand(query_), What());
          ForgetCache();
        }
        DeleteMadeMigParts(query_, What(), parts);
      } catch (const Error& also) {
        throw Error(e.code(), fmt::format("{}\nand what it made could not be deleted: {}", e.what(),
                                          also.what()));
      }
      throw;
    }
  }

  bool Delete(DeleteScope scope) override {
    ForgetRepairs();
    const bool group =
        RunGcloudUnlessNotFound(GcloudMigGroupDeleteCommand(query_), What()) != std::nullopt;
    ForgetCache();
    if (scope == DeleteScope::kVms) return group;
    // Then the template and the policy, only when podrun made them for this group.
    return DeleteOwnedMigParts(query_, What()) || group;
  }

  // A group's parts are matched to create: by their digest when it is made (mig_parts.h).
  std::string DiffersFrom(const TpuCreate&) override { return ""; }

  TpuHostKeys PublishedHostKeys(const SourceState& state) override {
    if (!state.not_ready.empty()) return {};
    return ReadHostKeys(query_, What(), state.workers);
  }

 private:
  // Sets now's condition, state and why from the group's instances.
  void ClassifyInstances(const std::vector<ManagedInstance>& instances, SourceNow* now) {
    for (const ManagedInstance& m : instances) {
      if (IsMigStockoutCode(m.last_error_code)) now->stockout = m.last_error;
    }
    for (const ManagedInstance& m : instances) {
      const bool idle = m.current_action.empty() || m.current_action == "NONE";
      if (idle && (m.status == "TERMINATED" || m.status == "STOPPED" || m.status == "SUSPENDED")) {
        const std::optional<bool> repairs = RepairsFailedVms();
        if (!repairs) {
          now->condition = SourceCondition::kGone;
          now->state = "deleted";
          now->why = fmt::format("MIG slice {} no longer exists", query_.name);
          return;
        }
        if (*repairs) {
          // Standard or flex-start capacity: the group repairs the VM (it has not begun yet).
          now->condition = SourceCondition::kBusy;
          now->state = "repairing";
          now->why = fmt::format("MIG slice {}: instance {} is {}: the group repairs it",
                                 query_.name, m.name, m.status);
          return;
        }
        // A Spot VM preempted: its group (do-nothing on failure) leaves it so; a slice cannot
        // run without it, so only remaking the slice brings it back.
        now->condition = SourceCondition::kPreempted;
        now->state = m.status;
        now->why = fmt::format("MIG slice {}: instance {} is {}", query_.name, m.name, m.status);
        return;
      }
    }
    const std::string not_ready = MigNotReady(query_.name, instances);
    if (not_ready.empty()) {
      now->condition = SourceCondition::kReady;
      now->state = "RUNNING";
      return;
    }
    now->condition = SourceCondition::kBusy;
    now->why = not_ready;
    const bool creating = std::all_of(instances.begin(), instances.end(), [](const auto& m) {
      return m.current_action.starts_with("CREATING");
    });
    now->deleting = !instances.empty() &&
                    std::all_of(instances.begin(), instances.end(),
                                [](const auto& m) { return m.current_action == "DELETING"; });
    now->state = instances.empty() ? "no instances yet"
                 : now->deleting   ? "DELETING"
                 : creating        ? "CREATING"
                                   : "repairing";
  }

  void ForgetRepairs() {
    std::lock_guard lock(list_mutex_);
    repairs_.reset();
  }

  // Whether the group repairs a VM that stopped (MigRepairsFailedVms), asked once per group
  // (a create or delete asks again); nullopt when the group no longer exists.
  std::optional<bool> RepairsFailedVms() {
    {
      std::lock_guard lock(list_mutex_);
      if (repairs_) return repairs_;
    }
    const std::optional<std::string> group =
        RunGcloudUnlessNotFound(GcloudMigGroupDescribeCommand(query_), What());
    if (!group) return std::nullopt;
    const bool repairs = MigRepairsFailedVms(*group, What());
    std::lock_guard lock(list_mutex_);
    repairs_ = repairs;
    return repairs;
  }

  // Caches `s` (whole or not at all: two commands may store at once). Not cached when it cannot
  // be written: the next command asks gcloud again.
  void Store(const SourceState& s) const {
    std::error_code ec;
    std::filesystem::create_directories(cache_dir_, ec);
    try {
      WriteFileAtomically(cache_, ToJson(s).dump(), 0600);
    } catch (const Error&) {
    }
  }

  // The group's instances as Now() just listed them (within kListReuse), so that the Describe
  // that follows a ready answer asks only for the addresses: one gcloud start-up less.
  std::optional<std::string> RecentList() {
    std::lock_guard lock(list_mutex_);
    if (!last_list_ || std::chrono::steady_clock::now() - last_list_at_ > kListReuse) {
      return std::nullopt;
    }
    std::optional<std::string> list = std::move(last_list_);
    last_list_.reset();  // used once
    return list;
  }
  static constexpr auto kListReuse = std::chrono::seconds(2);

  std::mutex list_mutex_;
  std::optional<std::string> last_list_;  // guarded by list_mutex_
  std::optional<bool> repairs_;           // guarded by list_mutex_
  std::chrono::steady_clock::time_point last_list_at_;

  const SliceRef query_;
  const std::filesystem::path cache_dir_;
  std::filesystem::path cache_;
};

}  // namespace

std::unique_ptr<PodSource> MakeMigSource(const SliceRef& query,
                                         const std::filesystem::path& cache_dir) {
  return std::make_unique<MigSource>(query, cache_dir);
}

}  // namespace podrun
