// See status_progress.h.
#include "launcher/commands/status_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "launcher/output/time_format.h"

namespace podrun {

std::string StepText(const WorkerProgress& progress, int64_t now_ns) {
  if (!progress.step) return "-";
  if (!progress.step_ns) return std::to_string(*progress.step);
  return fmt::format("{} ({} ago)", *progress.step, FormatDuration(now_ns - *progress.step_ns));
}

nlohmann::json ProgressJson(const WorkerProgress& progress) {
  auto or_null = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"step", or_null(progress.step)},
          {"step_ns", or_null(progress.step_ns)},
          {"steps_per_s", progress.steps_per_s
                              ? nlohmann::json(std::round(*progress.steps_per_s * 1000) / 1000)
                              : nlohmann::json()},
          {"straggler",
           progress.straggler ? nlohmann::json(progress.straggler->Text()) : nlohmann::json()}};
}

nlohmann::json HangReportJson(const HangReportRecord& report) {
  nlohmann::json j = nlohmann::json::parse(report.json, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json() : j;
}

std::vector<std::string> HangReportLines(const HangReportRecord& report, const std::string& job_id,
                                         size_t max_lines) {
  std::vector<std::string> out = {fmt::format("hang report (made when the stall watch fired, {}):",
                                              FormatLocalTime(report.made_ns))};
  // The verdict's lines, the suspects first (as the report orders them; kept so here).
  std::vector<std::pair<bool, std::string>> lines;
  const nlohmann::json j = HangReportJson(report);
  if (j.is_object() && j.contains("verdict") && j["verdict"].is_array()) {
    for (const nlohmann::json& v : j["verdict"]) {
      if (!v.is_object() || !v.contains("line") || !v["line"].is_string()) continue;
      const bool suspect = v.contains("suspect") && v["suspect"].is_boolean() && v["suspect"];
      lines.emplace_back(suspect, v["line"].get<std::string>());
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const auto& a, const auto& b) { return a.first && !b.first; });
  } else {  // no verdict to read: the text as printed
    std::istringstream text(report.text);
    for (std::string line; std::getline(text, line);) {
      if (!line.empty()) lines.emplace_back(false, line);
    }
  }
  for (size_t i = 0; i < lines.size() && i < max_lines; ++i) out.push_back("  " + lines[i].second);
  if (lines.size() > max_lines) {
    out.push_back(
        fmt::format("  ... {} more: podrun status {} --json", lines.size() - max_lines, job_id));
  }
  return out;
}

}  // namespace podrun
