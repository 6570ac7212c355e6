// `podrun doctor` (see doctor_command.h).
#include "launcher/commands/doctor_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "launcher/base/open_files.h"
#include "launcher/commands/pod_options.h"
#include "launcher/connect/job_agents.h"
#include "launcher/store/podrun_home.h"
#include "proto/write_all.h"

namespace podrun {
namespace {

struct Finding {
  std::optional<AgentHello> hello;
  std::optional<AgentInspection> inspection;
  std::string error;
};

std::string Gigabytes(uint64_t bytes) {
  return fmt::format("{:.1f} GB", static_cast<double>(bytes) / 1e9);
}

bool TcmallocPreload(const std::string& ld_preload) {
  return ld_preload.find("tcmalloc") != std::string::npos;
}

// Problems a user should act on.
std::vector<std::string> Problems(const AgentInspection& i) {
  std::vector<std::string> problems;
  for (const auto& h : i.holders) {
    problems.push_back(fmt::format("pid {} ({}) holds {}", h.pid, h.command, h.device));
  }
  if (i.lockfile_stale) problems.push_back("a stale /tmp/libtpu_lockfile");
  if (TcmallocPreload(i.login_ld_preload)) {
    problems.push_back("LD_PRELOAD of TCMalloc in the login environment (breaks gsutil)");
  }
  return problems;
}

}  // namespace

ExitCode RunDoctor(const DoctorRequest& request) {
  JobAgents agents(request.pod, PodrunHome() / "local", request.pod.selected);
  std::vector<Finding> findings(agents.agents().size());
  std::mutex mu;
  for (size_t i = 0; i < agents.agents().size(); ++i) findings[i].error = agents.agents()[i].error;
  agents.ForEachReachable([&](JobAgent& agent) {
    Finding f;
    try {
      f.hello = agent.client->Hello();
      f.inspection = agent.client->Inspect(request.fix, request.all_users);
    } catch (const std::exception& e) {
      f.error = e.what();
    }
    std::lock_guard lock(mu);
    findings[static_cast<size_t>(&agent - agents.agents().data())] = std::move(f);
  });
  int unreachable = 0, troubled = 0;
  std::string out;
  for (size_t i = 0; i < findings.size(); ++i) {
    const JobAgent& agent = agents.agents()[i];
    const Finding& f = findings[i];
    const bool ok = f.error.empty() && f.inspection;
    unreachable += ok ? 0 : 1;
    const std::vector<std::string> problems =
        ok ? Problems(*f.inspection) : std::vector<std::string>{};
    troubled += problems.empty() ? 0 : 1;
    if (request.json) {
      nlohmann::json j;
      j["worker"] = agent.index;
      j["host"] = agent.description;
      j["reachable"] = ok;
      j["error"] = ok ? nlohmann::json() : nlohmann::json(f.error);
      if (ok) {
        const AgentInspection& in = *f.inspection;
        j["agent_version"] = f.hello->agent_version;
        j["clock_offset_ms"] = static_cast<double>(agent.clock_offset_ns) / 1e6;
        j["accelerator_devices"] = in.accelerator_devices;
        nlohmann::json holders = nlohmann::json::array();
        for (const auto& h : in.holders) {
          holders.push_back({{"pid", h.pid}, {"command", h.command}, {"device", h.device}});
        }
        j["holders"] = holders;
        j["libtpu_lockfile"] = in.lockfile_stale ? "stale" : in.lockfile_exists ? "held" : "absent";
        j["home_free_bytes"] = in.home_free_bytes;
        j["tmp_free_bytes"] = in.tmp_free_bytes;
        j["login_ld_preload"] = in.login_ld_preload;
        j["tcmalloc_preload"] = TcmallocPreload(in.login_ld_preload);
        j["fixed"] = in.fix_actions;
        j["problems"] = problems;
      }
      out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
      continue;
    }
    if (!ok) {
      out += fmt::format("{}: unreachable: {}\n", agent.description, f.error);
      continue;
    }
    const AgentInspection& in = *f.inspection;
    out += fmt::format("{}: agent {}, clock offset {:+.1f} ms\n", agent.description,
                       f.hello->agent_version, static_cast<double>(agent.clock_offset_ns) / 1e6);
    for (const std::string& action : in.fix_actions) out += "  fixed: " + action + "\n";
    std::string devices;
    for (const auto& d : in.accelerator_devices) devices += (devices.empty() ? "" : " ") + d;
    out += "  accelerators: " + (devices.empty() ? std::string("none") : devices) + "\n";
    for (const auto& h : in.holders) {
      out += fmt::format("    held by pid {} ({}): {}\n", h.pid, h.command, h.device);
    }
    out += std::string("  libtpu lockfile: ") +
           (in.lockfile_stale    ? "stale (podrun doctor --fix removes it)"
            : in.lockfile_exists ? "held by a live process"
                                 : "absent") +
           "\n";
    out += fmt::format("  disk free: {} where the agent keeps its state, {} in /tmp\n",
                       Gigabytes(in.home_free_bytes), Gigabytes(in.tmp_free_bytes));
    out += "  login LD_PRELOAD: " +
           (in.login_ld_preload.empty() ? std::string("unset") : in.login_ld_preload) +
           (TcmallocPreload(in.login_ld_preload) ? "  <- TCMalloc: breaks gsutil; unset it" : "") +
           "\n";
  }
  WriteAll(STDOUT_FILENO, out);
  if (unreachable > 0) return ExitCode::kUnreachable;
  return troubled > 0 ? ExitCode::kFailed : ExitCode::kOk;
}

namespace {

CommandRun AddDoctorOptions(CLI::App& app) {
  app.description(
      "Per worker: reachable and authenticated, agent version, clock offset, accelerator\n"
      "devices and the processes holding them, a stale /tmp/libtpu_lockfile, free disk,\n"
      "and a TCMalloc LD_PRELOAD in the login environment. Exit: 3 if a worker cannot be\n"
      "reached, 1 if a problem is left, else 0.");
  auto settings = std::make_shared<PodSettings>();
  auto request = std::make_shared<DoctorRequest>();
  AddPodOptions(app, *settings);
  app.add_flag("--fix", request->fix,
               "End the processes holding the accelerators (this user's only), remove a "
               "stale lockfile");
  app.add_flag("--all-users", request->all_users,
               "With --fix: end other users' holders too (needs root on the workers)")
      ->needs("--fix");
  app.add_flag("--json", request->json, "One JSON object per worker");
  app.footer("Example: podrun doctor --tpu node-1 --zone us-central2-b --fix");
  return [settings, request] {
    request->pod = ResolvePod(*settings);
    EnsureOpenFiles(request->pod.selected.size());
    return RunDoctor(*request);
  };
}

}  // namespace

Command DoctorCommand() {
  return {"doctor", "check every worker: reachability, accelerators, lockfile, disk",
          AddDoctorOptions};
}

}  // namespace podrun
