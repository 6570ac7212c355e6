// `podrun report --json` (see report_json.h).
#include "launcher/insight/report_json.h"

#include "launcher/insight/report_text.h"

namespace podrun {
namespace {

template <class T>
nlohmann::json OrNull(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

double Seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

nlohmann::json PhasesJson(const std::vector<PhaseSegment>& segments) {
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseSegment& p : segments) {
    phases.push_back({{"phase", p.phase},
                      {"start_ns", p.start_ns},
                      {"end_ns", OrNull(p.end_ns)},
                      {"failed", p.failed}});
  }
  return phases;
}

nlohmann::json WorkerJson(const WorkerTimeline& w) {
  nlohmann::json phases = PhasesJson(w.phases);
  nlohmann::json samples = nlohmann::json::array();
  for (const StepSample& s : w.samples) samples.push_back({s.time_ns, s.step});
  return {{"worker", w.worker},
          {"host", w.host},
          {"phases", std::move(phases)},
          {"first_step_ns", OrNull(w.first_step_ns)},
          {"last_step_ns", OrNull(w.last_step_ns)},
          {"last_step", OrNull(w.last_step)},
          {"steps_per_s", OrNull(w.steps_per_s)},
          {"straggler", w.straggler ? nlohmann::json(w.straggler->Text()) : nlohmann::json()},
          {"end",
           {{"state", WorkerStateName(w.state)},
            {"exit_code", OrNull(w.exit_code)},
            {"signal", OrNull(w.signal)},
            {"start_ns", OrNull(w.start_ns)},
            {"end_ns", OrNull(w.end_ns)},
            {"error", w.error.empty() ? nlohmann::json() : nlohmann::json(w.error)},
            {"text", WorkerEndText(w)}}},
          {"samples", std::move(samples)}};
}

}  // namespace

nlohmann::json ReportJson(const RunTimeline& run, const RunAccount& account) {
  nlohmann::json lost_s = nlohmann::json::object();
  for (size_t c = 0; c < kLostCauses; ++c) {
    lost_s[LostCauseName(static_cast<LostCause>(c))] = Seconds(account.lost_ns[c]);
  }
  nlohmann::json startup = nlohmann::json::array();
  for (const StartupPart& p : account.startup) {
    startup.push_back({{"part", p.part}, {"s", Seconds(p.ns)}});
  }
  nlohmann::json lost = nlohmann::json::array();
  for (const LostInterval& l : account.lost) {
    lost.push_back({{"attempt", l.attempt},
                    {"cause", LostCauseName(l.cause)},
                    {"from_ns", l.from_ns},
                    {"to_ns", l.to_ns}});
  }
  nlohmann::json attempts = nlohmann::json::array();
  for (size_t i = 0; i < run.attempts.size(); ++i) {
    const AttemptTimeline& a = run.attempts[i];
    const std::optional<LostCause> cause = LostCauseOf(a);
    nlohmann::json workers = nlohmann::json::array();
    for (const WorkerTimeline& w : a.workers) workers.push_back(WorkerJson(w));
    const auto& steps = account.steps.at(i);
    attempts.push_back(
        {{"number", a.number},
         {"reason", AttemptReasonName(a.reason)},
         {"started_ns", a.started_ns},
         {"ended_ns", OrNull(a.ended_ns)},
         {"state", AttemptStateName(a.state)},
         {"ended_by", a.ended_by == AttemptEnd::kNone ? nlohmann::json()
                                                      : nlohmann::json(AttemptEndName(a.ended_by))},
         {"lost_to", cause ? nlohmann::json(LostCauseName(*cause)) : nlohmann::json()},
         {"cause", a.cause.empty() ? nlohmann::json() : nlohmann::json(a.cause)},
         {"exit_code", OrNull(a.exit_code)},
         {"steps", steps
                       ? nlohmann::json{{"first_ns", steps->first_ns}, {"last_ns", steps->last_ns}}
                       : nlohmann::json()},
         {"hang_report", a.hang_report ? nlohmann::json{{"made_ns", a.hang_report->made_ns},
                                                        {"text", a.hang_report->text}}
                                       : nlohmann::json()},
         {"provisioning", PhasesJson(a.provisioning)},
         {"workers", std::move(workers)}});
  }
  nlohmann::json recoveries = nlohmann::json::array();
  for (const RecoveryInterval& r : run.recoveries) {
    recoveries.push_back({{"after_attempt", r.after_attempt},
                          {"node", r.node},
                          {"state", r.state},
                          {"seen_ns", r.seen_ns},
                          {"back_ns", OrNull(r.back_ns)},
                          {"recreated", r.recreated},
                          {"what", r.what()}});
  }
  return {{"job", run.job_id},
          {"name", run.job_name},
          {"pod", run.pod},
          {"now_ns", run.now_ns},
          {"start_ns", account.start_ns},
          {"end_ns", account.end_ns},
          {"goodput", account.stepped ? nlohmann::json(account.goodput) : nlohmann::json()},
          {"wall_s", Seconds(account.wall_ns)},
          {"steps_s", Seconds(account.steps_ns)},
          {"lost_s", std::move(lost_s)},
          {"startup_s", Seconds(account.startup_ns)},
          {"startup", std::move(startup)},
          {"other_s", Seconds(account.other_ns)},
          {"lost", std::move(lost)},
          {"attempts", std::move(attempts)},
          {"recoveries", std::move(recoveries)}};
}

}  // namespace podrun
