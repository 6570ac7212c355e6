// What `status` and `ls` say about a job's recovery (docs/reference.md, "Provisioning and
// recovery"): its preemptions (seen at, back at, time lost) and its keeper (running with its
// last heartbeat, gone with how to watch again, or ended and why).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/job_store.h"

namespace podrun {

// The keeper of a job as status shows it.
enum class KeeperState { kNone, kRunning, kGone, kEnded };  // kNone: the job never had one
// "running", "gone", "ended" (status --json keeper.state); "" for kNone.
const char* KeeperStateName(KeeperState state);

struct KeeperView {
  KeeperState state = KeeperState::kNone;
  int pid = 0;  // as it recorded itself
  std::string host;
  std::string text;  // one line for the table
  nlohmann::json json;
};
KeeperView ViewKeeper(JobStore& store, const std::filesystem::path& home, const JobRecord& job);

// The lines under status's table: preemptions, one each, with the sum; the keeper.
std::vector<std::string> RecoveryLines(JobStore& store, const std::filesystem::path& home,
                                       const JobRecord& job);
// {"preemptions": [...], "time_lost_seconds": S, "keeper": {...} | null} for status --json.
nlohmann::json RecoveryJson(JobStore& store, const std::filesystem::path& home,
                            const JobRecord& job);

// For a job between attempts that podrun is healing: "recovering (recreating TPU node node-1
// (PREEMPTED), for 1m02s)"; nullopt otherwise. Shown by status and ls in place of the ended
// attempt's state, so that a run that heals is not read as failed.
std::optional<std::string> RecoveringText(JobStore& store, const std::string& job_id);
// The same as {"what": ..., "since": ..., "seconds": ...}, or null.
nlohmann::json RecoveringJson(JobStore& store, const std::string& job_id);

// What the job has used of its budgets since its last launch or rerun: restarts after a failure
// (of `restarts:`) and recoveries after a preemption (of `preemptions:`, nullopt: unlimited).
struct BudgetView {
  int restarts_used = 0;
  int restarts = 0;
  int preemptions_used = 0;
  std::optional<int> preemptions;
  std::string text;    // "restarts 1/3 · preemptions 7" (or "preemptions 2/5")
  bool shown = false;  // worth a line: something to restart or recover, or something was
  nlohmann::json json;
};
BudgetView ViewBudget(JobStore& store, const JobRecord& job);

// "1/3" (restarts used of restarts:) for ls, or "-" when the job has nothing to restart.
std::string RestartsCell(JobStore& store, const std::string& job_id);

// "2 (1m03s lost)" for ls, or "-".
std::string PreemptionsCell(JobStore& store, const std::string& job_id);

}  // namespace podrun
