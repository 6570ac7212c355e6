// See recovery_report.h.
#include "launcher/recovery/recovery_report.h"

#include <fmt/format.h>
#include <unistd.h>

#include "launcher/output/time_format.h"
#include "launcher/recovery/driver_lock.h"
#include "launcher/recovery/restarts.h"
#include "launcher/spec/spec.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

// A keeper on another machine is taken as gone after this long without a heartbeat.
constexpr int64_t kHeartbeatStaleNs = 60'000'000'000;

nlohmann::json TimeOrNull(const std::optional<int64_t>& ns) {
  return ns ? nlohmann::json(FormatRfc3339(*ns)) : nlohmann::json();
}

}  // namespace

const char* KeeperStateName(KeeperState state) {
  switch (state) {
    case KeeperState::kRunning:
      return "running";
    case KeeperState::kGone:
      return "gone";
    case KeeperState::kEnded:
      return "ended";
    case KeeperState::kNone:
      break;
  }
  return "";
}

KeeperView ViewKeeper(JobStore& store, const std::filesystem::path& home, const JobRecord& job) {
  KeeperView view;
  const std::optional<KeeperRecord> k = RecoveryRecords(store).GetKeeper(job.id);
  if (!k) return view;
  view.pid = k->pid;
  view.host = k->host;
  const int64_t now = NowUnixNs();
  const std::string ago = FormatDuration(now - k->heartbeat_ns) + " ago";
  bool alive = false;
  if (k->host == ThisHostName()) {
    // The lock's holder, if it is this keeper (an attached rerun may hold it after a keeper
    // died); a holder in another pid namespace (0) is taken as the keeper.
    const std::optional<int> holder = DriverHolder(home, job.id);
    alive = holder && (*holder <= 0 || *holder == k->pid);
  } else {
    alive = !k->ended_ns && now - k->heartbeat_ns < kHeartbeatStaleNs;
  }
  if (k->ended_ns) {  // said so itself (it may still be exiting, its lock not yet released)
    view.state = KeeperState::kEnded;
    view.text = fmt::format("keeper: ended {} ({})", FormatLocalTime(*k->ended_ns), k->end_note);
  } else if (alive) {
    view.state = KeeperState::kRunning;
    view.text = fmt::format("keeper: pid {} on {}, last heartbeat {}", k->pid, k->host, ago);
  } else {
    view.state = KeeperState::kGone;
    view.text = fmt::format(
        "keeper: gone (pid {} on {}, last heartbeat {}): nothing restarts the job now; start "
        "watching again with: podrun watch {}",
        k->pid, k->host, ago, job.id);
  }
  view.json = {{"state", KeeperStateName(view.state)},
               {"pid", k->pid},
               {"host", k->host},
               {"started", FormatRfc3339(k->started_ns)},
               {"heartbeat", FormatRfc3339(k->heartbeat_ns)},
               {"ended", TimeOrNull(k->ended_ns)},
               {"note", k->end_note}};
  return view;
}

BudgetView ViewBudget(JobStore& store, const JobRecord& job) {
  BudgetView view;
  try {
    const JobSpec spec = ParseRecordedSpec(job.spec_text, job.spec_path);
    view.restarts = spec.restarts;
    view.preemptions = spec.preemptions;
    view.shown = spec.restarts > 0 || spec.pod.create.has_value();
  } catch (const Error&) {  // a record no spec reads from: its counts alone
  }
  const RecoveriesUsed used = RecoveriesSince(store.Attempts(job.id));
  view.restarts_used = used.restarts;
  view.preemptions_used = used.preemptions;
  view.shown = view.shown || used.restarts > 0 || used.preemptions > 0;
  view.text =
      fmt::format("restarts {}/{} \u00b7 preemptions {}{}", used.restarts, view.restarts,
                  used.preemptions, view.preemptions ? fmt::format("/{}", *view.preemptions) : "");
  view.json = {{"restarts_used", used.restarts},
               {"restarts", view.restarts},
               {"preemptions_used", used.preemptions},
               {"preemptions", view.preemptions ? nlohmann::json(*view.preemptions)
                                                : nlohmann::json("unlimited")}};
  return view;
}

std::vector<std::string> RecoveryLines(JobStore& store, const std::filesystem::path& home,
                                       const JobRecord& job) {
  std::vector<std::string> lines;
  if (const BudgetView budget = ViewBudget(store, job); budget.shown) lines.push_back(budget.text);
  const std::vector<PreemptionRecord> preemptions = RecoveryRecords(store).Preemptions(job.id);
  int64_t lost = 0;
  for (const PreemptionRecord& p : preemptions) {
    const std::optional<int64_t> cost = TimeLostToPreemption(store, job.id, p);
    lost += cost.value_or(0);
    lines.push_back(fmt::format(
        "preempted: attempt {}: node {} {} at {}; {}; time lost {}", p.attempt, p.node, p.state,
        FormatLocalTime(p.seen_ns),
        p.back_ns ? fmt::format("READY again at {} (after {}{})", FormatLocalTime(*p.back_ns),
                                FormatDuration(*p.back_ns - p.seen_ns),
                                p.recreated ? ", recreated by podrun" : "")
                  : std::string("not READY again yet"),
        cost ? FormatDuration(*cost) : std::string("(the gang has not started again yet)")));
  }
  if (preemptions.size() > 1) {
    lines.push_back(
        fmt::format("{} preemptions: {} lost in all", preemptions.size(), FormatDuration(lost)));
  }
  if (KeeperView keeper = ViewKeeper(store, home, job); keeper.state != KeeperState::kNone) {
    lines.push_back(keeper.text);
  }
  return lines;
}

nlohmann::json RecoveryJson(JobStore& store, const std::filesystem::path& home,
                            const JobRecord& job) {
  nlohmann::json out;
  out["preemptions"] = nlohmann::json::array();
  double lost = 0;
  for (const PreemptionRecord& p : RecoveryRecords(store).Preemptions(job.id)) {
    const std::optional<int64_t> cost = TimeLostToPreemption(store, job.id, p);
    lost += static_cast<double>(cost.value_or(0)) / 1e9;
    out["preemptions"].push_back(
        {{"attempt", p.attempt},
         {"node", p.node},
         {"state", p.state},
         {"seen", FormatRfc3339(p.seen_ns)},
         {"seen_ns", p.seen_ns},
         {"back", TimeOrNull(p.back_ns)},
         {"back_ns", p.back_ns ? nlohmann::json(*p.back_ns) : nlohmann::json()},
         {"recreated", p.recreated},
         {"lost_seconds",
          cost ? nlohmann::json(static_cast<double>(*cost) / 1e9) : nlohmann::json()}});
  }
  out["time_lost_seconds"] = lost;
  out["budget"] = ViewBudget(store, job).json;
  KeeperView keeper = ViewKeeper(store, home, job);
  out["keeper"] = keeper.state == KeeperState::kNone ? nlohmann::json() : keeper.json;
  return out;
}

std::optional<std::string> RecoveringText(JobStore& store, const std::string& job_id) {
  const std::optional<RecoveringRecord> r = RecoveryRecords(store).Recovering(job_id);
  if (!r) return std::nullopt;
  return fmt::format("recovering ({}, for {})", r->what, FormatDuration(NowUnixNs() - r->since_ns));
}

nlohmann::json RecoveringJson(JobStore& store, const std::string& job_id) {
  const std::optional<RecoveringRecord> r = RecoveryRecords(store).Recovering(job_id);
  if (!r) return nullptr;
  return {{"phase", RecoveringPhaseName(r->phase)},
          {"slice", r->slice.empty() ? nlohmann::json() : nlohmann::json(r->slice)},
          {"what", r->what},
          {"since", FormatRfc3339(r->since_ns)},
          {"seconds", static_cast<double>(NowUnixNs() - r->since_ns) / 1e9}};
}

std::string RestartsCell(JobStore& store, const std::string& job_id) {
  const BudgetView budget = ViewBudget(store, store.GetJob(job_id));
  if (!budget.shown) return "-";
  return fmt::format("{}/{}", budget.restarts_used, budget.restarts);
}

std::string PreemptionsCell(JobStore& store, const std::string& job_id) {
  const std::vector<PreemptionRecord> preemptions = RecoveryRecords(store).Preemptions(job_id);
  if (preemptions.empty()) return "-";
  int64_t lost = 0;
  for (const PreemptionRecord& p : preemptions) {
    lost += TimeLostToPreemption(store, job_id, p).value_or(0);
  }
  return fmt::format("{} ({} lost)", preemptions.size(), FormatDuration(lost));
}

}  // namespace podrun
