// Ordering and formatting `podrun top`'s rows (see top_table.h).
#include "launcher/output/top_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>

#include "launcher/output/time_format.h"

namespace podrun {
namespace {

// The sort key's group: failed first, then stragglers, then running (by silence), then the rest.
int Group(const TopRow& row) {
  if (row.failed) return 0;
  if (row.straggler) return 1;
  return row.silent_seconds ? 2 : 3;
}

constexpr int kSilenceGroup = 2;

// Columns of UTF-8 text: continuation bytes take none.
size_t Columns(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// The longest prefix of `text` of at most `columns` columns, not splitting a character.
std::string_view FitColumns(std::string_view text, size_t columns) {
  size_t used = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (used == columns) return text.substr(0, i);
    ++used;
  }
  return text;
}

std::string Silence(double seconds) {
  if (seconds < 60) return fmt::format("{}s", static_cast<int64_t>(seconds));
  return FormatDuration(static_cast<int64_t>(seconds) * 1'000'000'000);
}

std::string Accelerators(const std::vector<std::string>& devices) {
  if (devices.empty()) return "-";
  std::string out;
  for (const std::string& d : devices) {
    const size_t slash = d.rfind('/');
    out += (out.empty() ? "" : ",") + (slash == std::string::npos ? d : d.substr(slash + 1));
  }
  return out;
}

template <class T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// A rate or percentage to `digits` decimals (divided, so 12.3 prints as 12.3).
nlohmann::json Rounded(const std::optional<double>& v, int digits = 1) {
  const double scale = std::pow(10.0, digits);
  return v ? nlohmann::json(std::round(*v * scale) / scale) : nlohmann::json();
}

}  // namespace

void SortTopRows(std::vector<TopRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const TopRow& a, const TopRow& b) {
    if (Group(a) != Group(b)) return Group(a) < Group(b);
    if (Group(a) == kSilenceGroup) {
      const auto sa = static_cast<int64_t>(*a.silent_seconds);
      const auto sb = static_cast<int64_t>(*b.silent_seconds);
      if (sa != sb) return sa > sb;
    }
    return a.worker < b.worker;
  });
}

std::string FormatStepRate(double steps_per_s) {
  if (steps_per_s < 10) return fmt::format("{:.2f}", steps_per_s);
  if (steps_per_s < 100) return fmt::format("{:.1f}", steps_per_s);
  return fmt::format("{:.0f}", steps_per_s);
}

std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "K", "M", "G", "T", "P"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{}B", static_cast<uint64_t>(bytes));
  return bytes < 10 ? fmt::format("{:.1f}{}", bytes, kUnits[unit])
                    : fmt::format("{:.0f}{}", bytes, kUnits[unit]);
}

std::string CellText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {  // an escape sequence: CSI (ESC [ ... final byte) or ESC and one byte
      if (i + 1 < text.size() && text[i + 1] == '[') {
        i += 2;
        while (i < text.size() && (static_cast<unsigned char>(text[i]) < 0x40 ||
                                   static_cast<unsigned char>(text[i]) > 0x7e)) {
          ++i;
        }
      } else {
        ++i;
      }
      continue;
    }
    if (c == '\t') {
      out += ' ';
    } else if (c < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string FormatTopTable(const std::vector<TopRow>& rows, size_t width, size_t max_rows) {
  // A program that prints no step (or `progress: none`) gets the table it always had.
  const bool steps = std::any_of(rows.begin(), rows.end(), [](const TopRow& r) { return r.step; });
  std::vector<std::vector<std::string>> cells = {
      {"WORKER", "HOST", "STATE", "PID", "CPU%", "MEM", "PROCS", "ACCEL", "OUT/S", "SILENT"}};
  if (steps) cells[0].insert(cells[0].end(), {"STEP", "STEPS/S"});
  cells[0].push_back("LAST LINE");
  const size_t shown = max_rows > 0 ? std::min(max_rows, rows.size()) : rows.size();
  for (size_t r = 0; r < shown; ++r) {
    const TopRow& row = rows[r];
    std::string last = row.note.empty()
                           ? row.last_line
                           : row.note + (row.last_line.empty() ? "" : " | " + row.last_line);
    if (row.straggler) {
      last = "straggler: " + row.straggler_note + (last.empty() ? "" : " | " + last);
    }
    std::vector<std::string> line = {
        "w" + std::to_string(row.worker),
        row.host,
        row.state,
        row.pid ? std::to_string(*row.pid) : "-",
        row.cpu_percent ? fmt::format("{:.1f}", *row.cpu_percent) : "-",
        row.rss_bytes ? FormatBytes(static_cast<double>(*row.rss_bytes)) : "-",
        row.processes ? std::to_string(*row.processes) : "-",
        Accelerators(row.accelerators),
        row.output_bytes_per_second ? FormatBytes(*row.output_bytes_per_second) : "-",
        row.silent_seconds ? Silence(*row.silent_seconds) : "-",
    };
    if (steps) {
      line.push_back(row.step ? std::to_string(*row.step) : "-");
      line.push_back(row.steps_per_s ? FormatStepRate(*row.steps_per_s) : "-");
    }
    line.push_back(CellText(last));
    cells.push_back(std::move(line));
  }
  std::vector<size_t> widths(cells[0].size(), 0);
  for (const auto& line : cells) {
    for (size_t i = 0; i + 1 < line.size(); ++i) widths[i] = std::max(widths[i], Columns(line[i]));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (size_t i = 0; i + 1 < line.size(); ++i) {
      text += line[i] + std::string(widths[i] - Columns(line[i]) + 2, ' ');
    }
    text += line.back();
    while (!text.empty() && text.back() == ' ') text.pop_back();
    if (width > 0) text = std::string(FitColumns(text, width));
    out += text + "\n";
  }
  if (shown < rows.size()) {
    const size_t more = rows.size() - shown;
    out += fmt::format("... {} more worker{}\n", more, more == 1 ? "" : "s");
  }
  return out;
}

std::string TopRowJson(const TopRow& row) {
  const bool unreachable = row.state == "unreachable";
  const nlohmann::json j = {
      {"worker", row.worker},
      {"host", row.host},
      {"state", row.state},
      {"pid", OrNull(row.pid)},
      {"exit_code", OrNull(row.exit_code)},
      {"signal", OrNull(row.signal)},
      {"cpu_percent", Rounded(row.cpu_percent)},
      {"cpu_seconds", Rounded(row.cpu_seconds, 2)},
      {"rss_bytes", OrNull(row.rss_bytes)},
      {"processes", OrNull(row.processes)},
      {"accelerators", row.accelerators},
      {"output_bytes", OrNull(row.output_bytes)},
      {"output_bytes_per_second", Rounded(row.output_bytes_per_second)},
      {"silent_seconds", Rounded(row.silent_seconds)},
      {"last_line", row.last_line},
      {"error", unreachable ? nlohmann::json(row.note) : nlohmann::json()},
      {"note", !unreachable && !row.note.empty() ? nlohmann::json(row.note) : nlohmann::json()},
      {"step", OrNull(row.step)},
      {"step_ns", OrNull(row.step_ns)},
      {"steps_per_s", Rounded(row.steps_per_s, 3)},
      {"straggler", row.straggler ? nlohmann::json(row.straggler_note) : nlohmann::json()},
  };
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace podrun
