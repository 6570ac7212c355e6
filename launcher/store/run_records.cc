// See run_records.h; the tables are in job_store_schema.cc (migrations 5 and 6).
#include "launcher/store/run_records.h"

#include <fmt/format.h>

#include "launcher/store/sqlite_statement.h"

namespace podrun {

std::string StragglerNote::Text() const {
  return fmt::format("{:.2f} steps/s vs median {:.2f}", steps_per_s, median_steps_per_s);
}

void RunRecords::SetPhases(const std::string& job_id, int attempt,
                           const std::vector<PhaseRecord>& phases) {
  if (phases.empty()) return;
  Transaction tx = db_.Begin();
  Statement s = db_.Prepare(
      "INSERT OR REPLACE INTO phases (job_id, attempt, idx, phase, start_ns, end_ns, "
      "failed) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  for (const PhaseRecord& p : phases) {
    s.Reset()
        .Bind(1, job_id)
        .Bind(2, attempt)
        .Bind(3, p.worker)
        .Bind(4, p.phase)
        .Bind(5, p.start_ns)
        .Bind(6, p.end_ns)
        .Bind(7, p.failed ? 1 : 0)
        .Run();
  }
  tx.Commit();
}

std::vector<PhaseRecord> RunRecords::Phases(const std::string& job_id, int attempt) {
  Statement s = db_.Prepare(
      "SELECT idx, phase, start_ns, end_ns, failed FROM phases WHERE job_id = ?1 AND "
      "attempt = ?2 ORDER BY idx, start_ns");
  s.Bind(1, job_id).Bind(2, attempt);
  std::vector<PhaseRecord> out;
  while (s.Step()) {
    out.push_back({.worker = static_cast<int>(s.Int(0)),
                   .phase = s.Text(1),
                   .start_ns = s.Int(2),
                   .end_ns = s.OptionalInt(3),
                   .failed = s.Int(4) != 0});
  }
  return out;
}

void RunRecords::SaveProgress(const std::string& job_id, int attempt,
                              const std::vector<WorkerProgress>& progress,
                              const std::vector<StepSamplesUpdate>& samples) {
  if (progress.empty() && samples.empty()) return;
  Transaction tx = db_.Begin();
  Statement update = db_.Prepare(
      "UPDATE workers SET step = ?4, step_ns = ?5, first_step_ns = ?6, "
      "steps_per_s = ?7, straggler_steps_per_s = ?8, straggler_median = ?9 "
      "WHERE job_id = ?1 AND attempt = ?2 AND idx = ?3");
  for (const WorkerProgress& p : progress) {
    update.Reset()
        .Bind(1, job_id)
        .Bind(2, attempt)
        .Bind(3, p.worker)
        .Bind(4, p.step)
        .Bind(5, p.step_ns)
        .Bind(6, p.first_step_ns)
        .Bind(7, p.steps_per_s)
        .Bind(8, p.straggler ? std::optional<double>(p.straggler->steps_per_s) : std::nullopt)
        .Bind(9,
              p.straggler ? std::optional<double>(p.straggler->median_steps_per_s) : std::nullopt)
        .Run();
  }
  Statement clear =
      db_.Prepare("DELETE FROM step_samples WHERE job_id = ?1 AND attempt = ?2 AND idx = ?3");
  Statement insert = db_.Prepare(
      "INSERT OR REPLACE INTO step_samples (job_id, attempt, idx, time_ns, step) "
      "VALUES (?1, ?2, ?3, ?4, ?5)");
  for (const StepSamplesUpdate& u : samples) {
    if (u.replace) clear.Reset().Bind(1, job_id).Bind(2, attempt).Bind(3, u.worker).Run();
    for (const StepSample& sample : u.samples) {
      insert.Reset()
          .Bind(1, job_id)
          .Bind(2, attempt)
          .Bind(3, u.worker)
          .Bind(4, sample.time_ns)
          .Bind(5, sample.step)
          .Run();
    }
  }
  tx.Commit();
}

std::vector<WorkerProgress> RunRecords::Progress(const std::string& job_id, int attempt) {
  Statement s = db_.Prepare(
      "SELECT idx, step, step_ns, first_step_ns, steps_per_s, straggler_steps_per_s, "
      "straggler_median FROM workers WHERE job_id = ?1 AND attempt = ?2 ORDER BY idx");
  s.Bind(1, job_id).Bind(2, attempt);
  std::vector<WorkerProgress> out;
  while (s.Step()) {
    WorkerProgress p{.worker = static_cast<int>(s.Int(0)),
                     .step = s.OptionalInt(1),
                     .step_ns = s.OptionalInt(2),
                     .first_step_ns = s.OptionalInt(3),
                     .steps_per_s = s.OptionalDouble(4),
                     .straggler = std::nullopt};
    const std::optional<double> rate = s.OptionalDouble(5), median = s.OptionalDouble(6);
    if (rate && median) p.straggler = StragglerNote{*rate, *median};
    out.push_back(p);
  }
  return out;
}

std::vector<StepSample> RunRecords::StepSamples(const std::string& job_id, int attempt,
                                                int worker) {
  Statement s = db_.Prepare(
      "SELECT time_ns, step FROM step_samples WHERE job_id = ?1 AND attempt = ?2 AND "
      "idx = ?3 ORDER BY time_ns");
  s.Bind(1, job_id).Bind(2, attempt).Bind(3, worker);
  std::vector<StepSample> out;
  while (s.Step()) out.push_back({.time_ns = s.Int(0), .step = s.Int(1)});
  return out;
}

void RunRecords::SetHangReport(const std::string& job_id, int attempt,
                               const HangReportRecord& report) {
  Statement s = db_.Prepare(
      "INSERT OR REPLACE INTO hang_reports (job_id, attempt, made_ns, text, json) VALUES "
      "(?1, ?2, ?3, ?4, ?5)");
  s.Bind(1, job_id)
      .Bind(2, attempt)
      .Bind(3, report.made_ns ? report.made_ns : NowUnixNs())
      .Bind(4, report.text)
      .Bind(5, report.json)
      .Run();
}

std::optional<HangReportRecord> RunRecords::HangReport(const std::string& job_id, int attempt) {
  Statement s = db_.Prepare(
      "SELECT made_ns, text, json FROM hang_reports WHERE job_id = ?1 AND attempt = ?2");
  s.Bind(1, job_id).Bind(2, attempt);
  if (!s.Step()) return std::nullopt;
  return HangReportRecord{.made_ns = s.Int(0), .text = s.Text(1), .json = s.Text(2)};
}

}  // namespace podrun
