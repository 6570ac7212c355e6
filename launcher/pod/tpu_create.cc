// See tpu_create.h.
#include "launcher/pod/tpu_create.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

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

std::chrono::seconds CapacityWaitOf(const TpuCreate& create) {
  if (!create.capacity_wait) return kDefaultCapacityWait;
  return ParseTpuDuration(*create.capacity_wait).value_or(kDefaultCapacityWait);
}

std::string DescribeTpuCreate(const TpuCreate& c) {
  std::string out = c.accelerator_type + ", " + c.version;
  if (c.spot) out += ", spot";
  if (c.preemptible) out += ", preemptible";
  if (c.queued) out += ", queued";
  return out;
}

}  // namespace podrun
