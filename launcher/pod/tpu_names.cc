// See tpu_names.h.
#include "launcher/pod/tpu_names.h"

#include <fmt/format.h>

#include <algorithm>

#include "launcher/base/error.h"

namespace podrun {
namespace {

bool IsLowerOrDigit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// Why `s` is not lowercase letters, digits and hyphens, `min` to `max` long, starting with a
// letter and not ending with a hyphen; `example` shows a valid one.
std::string LabelProblem(const std::string& s, size_t min, size_t max, const char* example) {
  const std::string rule = fmt::format(
      "{} to {} lowercase letters, digits and hyphens, starting with a letter and not "
      "ending with a hyphen (e.g. {})",
      min, max, example);
  if (s.size() < min || s.size() > max) {
    return fmt::format("{} characters: it must be {}", s.size(), rule);
  }
  for (char c : s) {
    if (!IsLowerOrDigit(c) && c != '-') {
      return fmt::format("'{}' is not allowed: it must be {}", std::string(1, c), rule);
    }
  }
  if (s.front() < 'a' || s.front() > 'z') return "it must start with a letter: " + rule;
  if (s.back() == '-') return "it must not end with a hyphen: " + rule;
  return "";
}

std::string Named(const std::string& what, const std::string& value, const std::string& problem) {
  return problem.empty() ? "" : fmt::format("{} '{}': {}", what, value, problem);
}

}  // namespace

std::string TpuNodeNameProblem(const std::string& name) {
  return LabelProblem(name, 1, 63, "node-1");
}

std::string ZoneNameProblem(const std::string& zone) {
  return LabelProblem(zone, 1, 63, "us-central1-a");
}

std::string ProjectIdProblem(const std::string& project) {
  const size_t colon = project.rfind(':');
  if (colon != std::string::npos) {
    const std::string domain = project.substr(0, colon);
    if (domain.empty() || domain.front() == '-' || domain.front() == '.' ||
        domain.find("..") != std::string::npos) {
      return "its domain '" + domain + "' is not a domain name";
    }
    for (char c : domain) {
      if (!IsLowerOrDigit(c) && c != '-' && c != '.') {
        return "its domain '" + domain + "' is not a domain name";
      }
    }
  }
  return LabelProblem(colon == std::string::npos ? project : project.substr(colon + 1), 6, 30,
                      "my-project-123");
}

std::vector<std::string> SplitTpuNames(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  for (;;) {
    const size_t end = std::min(list.find(',', start), list.size());
    names.push_back(list.substr(start, end - start));
    if (end == list.size()) return names;
    start = end + 1;
  }
}

std::string TpuOptionsProblem(const std::optional<std::string>& tpu,
                              const std::optional<std::string>& zone,
                              const std::optional<std::string>& project) {
  if (tpu) {
    for (const std::string& name : SplitTpuNames(*tpu)) {
      if (std::string p = Named("--tpu", name, TpuNodeNameProblem(name)); !p.empty()) return p;
    }
  }
  if (zone) {
    if (std::string p = Named("--zone", *zone, ZoneNameProblem(*zone)); !p.empty()) return p;
  }
  if (project) {
    if (std::string p = Named("--project", *project, ProjectIdProblem(*project)); !p.empty()) {
      return p;
    }
  }
  return "";
}

void CheckSliceRef(const SliceRef& query) {
  std::string problem = Named("tpu name", query.name, TpuNodeNameProblem(query.name));
  if (problem.empty()) problem = Named("zone", query.zone, ZoneNameProblem(query.zone));
  if (problem.empty() && query.project) {
    problem = Named("project", *query.project, ProjectIdProblem(*query.project));
  }
  if (!problem.empty()) throw UsageError(problem);
}

}  // namespace podrun
