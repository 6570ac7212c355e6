// See tpu_create.h.
#include "launcher/pod/tpu_create.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <regex>

namespace podrun {
namespace {

// Accelerator types, versions and durations are short words of letters, digits, '-', '_', '.'.
bool IsPlainWord(const std::string& s) {
  return !s.empty() && s.size() <= 128 && std::isalnum(static_cast<unsigned char>(s[0])) &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

// "6h", "30m", "90s", "2d": a number and a unit, as gcloud's --valid-until-duration takes it.
bool IsDuration(const std::string& s) {
  if (s.size() < 2 || s.size() > 12) return false;
  const char unit = s.back();
  if (unit != 's' && unit != 'm' && unit != 'h' && unit != 'd') return false;
  return std::all_of(s.begin(), s.end() - 1,
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string TpuCreateProblem(const TpuCreate& c) {
  if (!c.machine_type.empty() || !c.topology.empty() || !c.image_family.empty() ||
      !c.image_project.empty() || !c.provisioning.empty() || c.max_run_duration) {
    return "machine_type, topology, image_family, image_project, provisioning and "
           "max_run_duration are for a MIG slice (pod.mig); a TPU node takes accelerator_type and "
           "version";
  }
  if (c.accelerator_type.empty()) return "accelerator_type is missing (e.g. v4-32)";
  if (!IsPlainWord(c.accelerator_type)) return "bad accelerator_type '" + c.accelerator_type + "'";
  if (c.version.empty()) return "version is missing (e.g. tpu-ubuntu2204-base)";
  if (!IsPlainWord(c.version)) return "bad version '" + c.version + "'";
  if (c.spot && c.preemptible) return "spot and preemptible exclude each other: choose one";
  if (c.queued && c.preemptible) {
    return "a queued resource takes spot: true, not preemptible (that is for tpu-vm create)";
  }
  if (c.valid_until && !c.queued) return "valid_until is for a queued resource (queued: true)";
  if (c.valid_until && !IsDuration(*c.valid_until)) {
    return "bad valid_until '" + *c.valid_until + "' (e.g. 6h, 30m, 2d)";
  }
  if (c.capacity_wait && !ParseTpuDuration(*c.capacity_wait)) {
    return "bad capacity_wait '" + *c.capacity_wait + "' (e.g. 6h, 30m, 2d; 0: do not wait)";
  }
  return "";
}

std::string MigCreateProblem(const TpuCreate& c) {
  if (!c.accelerator_type.empty() || !c.version.empty() || c.queued || c.preemptible ||
      c.valid_until) {
    return "accelerator_type, version, queued, preemptible and valid_until are for a TPU node "
           "(pod.tpu); a MIG slice takes machine_type, topology, image_family, image_project, "
           "provisioning, max_run_duration";
  }
  if (c.machine_type.empty()) return "machine_type is missing (e.g. tpu7x-standard-4t)";
  if (!IsPlainWord(c.machine_type)) return "bad machine_type '" + c.machine_type + "'";
  static const std::regex kTopology("[1-9][0-9]{0,3}(x[1-9][0-9]{0,3}){1,2}");
  if (c.topology.empty()) return "topology is missing (e.g. 2x2x4)";
  if (!std::regex_match(c.topology, kTopology)) {
    return "bad topology '" + c.topology + "' (e.g. 2x2x4 or 4x4)";
  }
  if (c.image_family.empty()) return "image_family is missing (the TPU VMs' boot image family)";
  if (!IsPlainWord(c.image_family)) return "bad image_family '" + c.image_family + "'";
  if (c.image_project.empty()) return "image_project is missing (the project of image_family)";
  if (!IsPlainWord(c.image_project)) return "bad image_project '" + c.image_project + "'";
  if (!c.provisioning.empty() && c.provisioning != "standard" && c.provisioning != "spot" &&
      c.provisioning != "flex_start") {
    return "bad provisioning '" + c.provisioning + "' (standard, spot or flex_start)";
  }
  if (c.spot && !c.provisioning.empty() && c.provisioning != "spot") {
    return "spot: true with provisioning: " + c.provisioning + ": choose one";
  }
  if (c.max_run_duration && !IsDuration(*c.max_run_duration)) {
    return "bad max_run_duration '" + *c.max_run_duration + "' (e.g. 7d, 12h)";
  }
  if (MigProvisioningOf(c) == "flex_start" && !c.max_run_duration) {
    return "provisioning: flex_start needs max_run_duration (at most 7d)";
  }
  if (!MigVmCount(c)) {
    return "topology " + c.topology + " is not a whole number of " + c.machine_type +
           " VMs (its name must end in -Nt: N chips a VM)";
  }
  if (c.capacity_wait && !ParseTpuDuration(*c.capacity_wait)) {
    return "bad capacity_wait '" + *c.capacity_wait + "' (e.g. 6h, 30m, 2d; 0: do not wait)";
  }
  return "";
}

std::string MigProvisioningOf(const TpuCreate& c) {
  if (c.spot) return "spot";
  return c.provisioning.empty() ? "standard" : c.provisioning;
}

std::optional<int> MigVmCount(const TpuCreate& c) {
  static const std::regex kChipsPerVm(".*-([1-9][0-9]?)t");
  std::smatch m;
  if (!std::regex_match(c.machine_type, m, kChipsPerVm)) return std::nullopt;
  const int per_vm = std::stoi(m[1].str());
  int64_t chips = 1;
  size_t at = 0;
  while (at <= c.topology.size()) {
    const size_t x = c.topology.find('x', at);
    const std::string part = c.topology.substr(at, x == std::string::npos ? x : x - at);
    if (part.empty() || part.size() > 4 ||
        !std::all_of(part.begin(), part.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      return std::nullopt;
    }
    chips *= std::stoll(part);
    if (x == std::string::npos) break;
    at = x + 1;
  }
  if (chips % per_vm != 0 || chips / per_vm > 100000) return std::nullopt;
  return static_cast<int>(chips / per_vm);
}

std::optional<std::chrono::seconds> ParseTpuDuration(const std::string& text) {
  if (text == "0") return std::chrono::seconds(0);
  if (!IsDuration(text)) return std::nullopt;
  const int64_t n = std::stoll(text.substr(0, text.size() - 1));
  const int64_t unit = text.back() == 's'   ? 1
                       : text.back() == 'm' ? 60
                       : text.back() == 'h' ? 3600
                                            : 86400;
  if (n > 366LL * 86400 / unit) return std::nullopt;  // over a year: a typo
  return std::chrono::seconds(n * unit);
}

std::vector<std::string> SliceZones(const TpuCreate& create, const std::string& zone) {
  std::vector<std::string> zones = {zone};
  for (const std::string& z : create.fallback_zones) {
    if (std::find(zones.begin(), zones.end(), z) == zones.end()) zones.push_back(z);
  }
  return zones;
}

std::chrono::seconds CapacityWaitOf(const TpuCreate& create) {
  if (!create.capacity_wait) return kDefaultCapacityWait;
  return ParseTpuDuration(*create.capacity_wait).value_or(kDefaultCapacityWait);
}

std::string DescribeTpuCreate(const TpuCreate& c) {
  if (!c.machine_type.empty()) {
    const std::optional<int> vms = MigVmCount(c);
    return fmt::format("{}, {} ({} VMs), {}", c.machine_type, c.topology, vms.value_or(0),
                       MigProvisioningOf(c));
  }
  std::string out = c.accelerator_type + ", " + c.version;
  if (c.spot) out += ", spot";
  if (c.preemptible) out += ", preemptible";
  if (c.queued) out += ", queued";
  return out;
}

}  // namespace podrun
