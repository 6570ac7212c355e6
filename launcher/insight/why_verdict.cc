// See why_verdict.h.
#include "launcher/insight/why_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "launcher/output/control_escape.h"

namespace podrun {
namespace {

bool IsShell(const std::string& command) {
  static const char* const kShells[] = {"sh", "bash", "dash", "zsh", "env", "timeout", "sudo"};
  return std::find(std::begin(kShells), std::end(kShells), command) != std::end(kShells);
}

const char* StateName(AgentJobState state) {
  switch (state) {
    case AgentJobState::kUnknown:
      return "unknown";
    case AgentJobState::kPrepared:
      return "not started";
    case AgentJobState::kRunning:
      return "running";
    case AgentJobState::kExited:
      return "exited";
    case AgentJobState::kStopped:
      return "stopped";
    case AgentJobState::kLost:
      return "lost";
  }
  return "unknown";
}

// What a worker reported, shown escaped (control_escape.h): a program's name, command line and
// stack, even a wait channel, are its own text and reach a terminal only as text.
std::string Esc(std::string_view text) {
  std::string scratch;
  return std::string(EscapeControls(text, scratch));
}

// Where a process is: "running", or "in <wait channel or system call>", or its state.
std::string Where(const AgentProcessReport& p) {
  if (p.state == AgentProcessState::kRunning) return "running";
  if (!p.wchan.empty()) return "in " + Esc(p.wchan);
  if (!p.syscall.empty()) return "in " + Esc(p.syscall);
  return AgentProcessStateName(p.state);
}

// What the verdict compares between workers: how the worker's job is (not) running.
std::string Signature(const WorkerWhy& w) {
  if (!w.report) return "unreachable";
  if (w.report->state != AgentJobState::kRunning) return StateName(w.report->state);
  const AgentProcessReport* main = MainProcess(*w.report);
  if (!main) return "no process";
  return Where(*main);
}

std::optional<double> SilentSeconds(const WorkerWhy& w) {
  if (!w.report || !w.report->last_output_ns) return std::nullopt;
  return static_cast<double>(w.report->now_ns - w.report->last_output_ns) / 1e9;
}

}  // namespace

std::string ShortDuration(double seconds) {
  const int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

const AgentProcessReport* MainProcess(const AgentWhyReport& report) {
  const AgentProcessReport* best = nullptr;
  for (const AgentProcessReport& p : report.processes) {
    if (IsShell(p.command) || p.state == AgentProcessState::kZombie) continue;
    if (!best || p.threads > best->threads ||
        (p.threads == best->threads && p.cpu_percent > best->cpu_percent)) {
      best = &p;
    }
  }
  if (!best && !report.processes.empty()) best = &report.processes.front();
  return best;
}

void MakeVerdict(WhyReport& report, int64_t now_ns) {
  report.verdict.clear();
  std::optional<int64_t> highest;
  std::map<std::string, int> signatures;
  for (const WorkerWhy& w : report.workers) {
    if (w.progress.step && (!highest || *w.progress.step > *highest)) highest = w.progress.step;
    ++signatures[Signature(w)];
  }
  // The state most workers share; none when no state is shared by more than one.
  std::string usual;
  int usual_count = 1;
  for (const auto& [signature, count] : signatures) {
    if (count > usual_count) {
      usual = signature;
      usual_count = count;
    }
  }
  struct Ranked {
    const WorkerWhy* w;
    bool behind, differs, gone;  // gone: unreachable, or its job no longer runs there
    double silent;
  };
  std::vector<Ranked> ranked;
  for (const WorkerWhy& w : report.workers) {
    const bool behind = w.progress.step && highest && *w.progress.step < *highest;
    const bool differs = !usual.empty() && Signature(w) != usual;
    const bool gone = !w.report || w.report->state != AgentJobState::kRunning;
    ranked.push_back({&w, behind, differs, gone, SilentSeconds(w).value_or(-1)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    if (a.behind != b.behind) return a.behind;
    if (a.behind && *a.w->progress.step != *b.w->progress.step) {
      return *a.w->progress.step < *b.w->progress.step;
    }
    if (a.differs != b.differs) return a.differs;
    if (a.gone != b.gone) return a.gone;
    if (a.silent != b.silent) return a.silent > b.silent;
    return a.w->worker < b.w->worker;
  });
  for (const Ranked& r : ranked) {
    const WorkerWhy& w = *r.w;
    std::vector<std::string> parts;
    if (w.progress.step) {
      parts.push_back(r.behind ? fmt::format("step {} (others {})", *w.progress.step, *highest)
                               : fmt::format("step {}", *w.progress.step));
    } else if (highest) {
      parts.push_back("no step yet");
    }
    // How long it has been like this: since its last step, else since its last output.
    std::optional<double> since;
    if (w.progress.step_ns) since = static_cast<double>(now_ns - *w.progress.step_ns) / 1e9;
    if (!since) since = SilentSeconds(w);
    if (!w.report) {
      parts.push_back("unreachable: " + Esc(w.error));
    } else if (w.report->state != AgentJobState::kRunning) {
      parts.push_back(fmt::format("its job is {}", StateName(w.report->state)));
    } else if (const AgentProcessReport* main = MainProcess(*w.report)) {
      parts.push_back(fmt::format("{} pid {} {}{}, CPU {:.0f}%", Esc(main->command), main->pid,
                                  Where(*main), since ? " " + ShortDuration(*since) : "",
                                  main->cpu_percent));
    } else {
      parts.push_back("no process of the job");
    }
    std::string text = fmt::format("w{}: {}", w.worker, r.behind || r.differs ? "suspect: " : "");
    for (size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
    report.verdict.push_back({w.worker, r.behind || r.differs, std::move(text)});
  }
}

void KeepStacksOf(WhyReport& report, size_t workers) {
  for (size_t i = workers; i < report.verdict.size(); ++i) {
    for (WorkerWhy& w : report.workers) {
      if (w.worker != report.verdict[i].worker || !w.report) continue;
      for (AgentProcessReport& p : w.report->processes) {
        if (p.stack.empty()) continue;
        p.stack.clear();
        p.stack_error = fmt::format("not kept: the stacks of the first {} workers are", workers);
      }
    }
  }
}

std::string WhyText(const WhyReport& report, size_t stack_lines, size_t detailed) {
  std::ostringstream out;
  const size_t suspects = std::count_if(report.verdict.begin(), report.verdict.end(),
                                        [](const WhyLine& l) { return l.suspect; });
  out << fmt::format("why: job {} attempt {}: {} workers, gathered in {:.1f} s; {}\n",
                     report.job_id, report.attempt, report.workers.size(), report.gather_seconds,
                     suspects
                         ? fmt::format("{} suspect{} first", suspects, suspects == 1 ? "" : "s")
                         : std::string("no worker stands out (longest silent first)"));
  for (const WhyLine& line : report.verdict) out << line.text << "\n";
  size_t shown = 0;
  for (const WhyLine& line : report.verdict) {
    if (shown++ == detailed) {
      out << fmt::format("\n(the other {} workers' processes: podrun status {} --json)\n",
                         report.verdict.size() - detailed, report.job_id);
      break;
    }
    const WorkerWhy& w = *std::find_if(report.workers.begin(), report.workers.end(),
                                       [&](const WorkerWhy& x) { return x.worker == line.worker; });
    if (!w.report) continue;
    out << fmt::format("\n{}: job {}", w.description, StateName(w.report->state));
    if (auto silent = SilentSeconds(w)) out << fmt::format(", silent {}", ShortDuration(*silent));
    out << "\n";
    for (const AgentProcessReport& p : w.report->processes) {
      out << fmt::format("  pid {} {} [{}] {}{}, CPU {:.0f}%, {} thread{}{}\n", p.pid,
                         Esc(p.command), Esc(p.cmdline), Where(p),
                         !p.syscall.empty() && !p.wchan.empty() ? " (" + Esc(p.syscall) + ")" : "",
                         p.cpu_percent, p.threads, p.threads == 1 ? "" : "s",
                         p.signalled ? ", signalled" : "");
      if (!p.stack.empty()) {
        out << fmt::format("    stack ({}):\n", p.stack_tool);
        std::istringstream lines(p.stack);
        std::string l;
        size_t n = 0;
        while (std::getline(lines, l)) {
          // gdb's chatter about itself is not the stack.
          if (l.rfind("[Thread debugging", 0) == 0 || l.rfind("Using host libthread_db", 0) == 0 ||
              l.rfind("[Inferior ", 0) == 0 || l.empty()) {
            continue;
          }
          if (stack_lines && n == stack_lines) {
            out << "      ...\n";
            break;
          }
          out << "      " << Esc(l) << "\n";
          ++n;
        }
      } else if (!p.stack_error.empty()) {
        out << "    no stack: " << Esc(p.stack_error) << "\n";
      }
    }
    if (w.report->processes_left_out > 0) {
      out << fmt::format(
          "  {} more process{} not shown (at most {} per worker: the leader and the busiest)\n",
          w.report->processes_left_out, w.report->processes_left_out == 1 ? "" : "es",
          w.report->processes.size());
    }
    if (!w.report->signal_note.empty()) out << "  " << Esc(w.report->signal_note) << "\n";
    if (!w.report->stack_note.empty()) out << "  " << Esc(w.report->stack_note) << "\n";
  }
  return out.str();
}

nlohmann::json WhyJson(const WhyReport& report) {
  nlohmann::json workers = nlohmann::json::array();
  for (const WorkerWhy& w : report.workers) {
    nlohmann::json j = {{"worker", w.worker}, {"host", w.description}};
    if (w.progress.step) j["step"] = *w.progress.step;
    if (w.progress.step_ns) j["step_ns"] = *w.progress.step_ns;
    if (!w.report) {
      j["error"] = w.error;
    } else {
      const AgentWhyReport& r = *w.report;
      j["state"] = StateName(r.state);
      j["now_ns"] = r.now_ns;
      j["last_output_ns"] = r.last_output_ns;
      j["gather_ms"] = r.gather_ms;
      if (!r.stack_note.empty()) j["stack_note"] = r.stack_note;
      if (!r.signal_note.empty()) j["signal_note"] = r.signal_note;
      if (r.processes_left_out > 0) j["processes_left_out"] = r.processes_left_out;
      nlohmann::json processes = nlohmann::json::array();
      for (const AgentProcessReport& p : r.processes) {
        processes.push_back({{"pid", p.pid},
                             {"ppid", p.ppid},
                             {"command", p.command},
                             {"cmdline", p.cmdline},
                             {"state", AgentProcessStateName(p.state)},
                             {"wchan", p.wchan},
                             {"syscall", p.syscall},
                             {"cpu_percent", p.cpu_percent},
                             {"threads", p.threads},
                             {"started_ns", p.started_ns},
                             {"signalled", p.signalled},
                             {"stack_tool", p.stack_tool},
                             {"stack", p.stack},
                             {"stack_error", p.stack_error}});
      }
      j["processes"] = std::move(processes);
    }
    workers.push_back(std::move(j));
  }
  nlohmann::json verdict = nlohmann::json::array();
  for (const WhyLine& l : report.verdict) {
    verdict.push_back({{"worker", l.worker}, {"suspect", l.suspect}, {"line", l.text}});
  }
  return {{"job", report.job_id},          {"attempt", report.attempt},
          {"made_ns", report.made_ns},     {"gather_s", report.gather_seconds},
          {"verdict", std::move(verdict)}, {"workers", std::move(workers)}};
}

}  // namespace podrun
