// A benchmark, not a test (scripts/bench record): the job store's record of a simulated long run,
// to state its bound. W workers print one step a second for D days; each worker's supervisor
// reads its lines (StepReader, as on the worker), the launcher's StepTracker is handed their
// records as the gang's progress watch would, and its progress and the workers' thinned samples
// are saved to a real SQLite store (every simulated hour instead of every 3 s: the record is the
// same, the bench is faster).
// Prints the store's size and its rows.
// Usage: podrun_record_bench [WORKERS] [DAYS]
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <string>
#include <vector>

#include "launcher/insight/step_tracker.h"
#include "launcher/store/job_store.h"
#include "launcher/store/run_records.h"
#include "worker/supervisor/step_reader.h"

int main(int argc, char** argv) {
  using namespace podrun;
  const int workers = argc > 1 ? std::atoi(argv[1]) : 64;
  const double days = argc > 2 ? std::atof(argv[2]) : 7;
  const int64_t seconds = static_cast<int64_t>(days * 24 * 3600);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("podrun-record-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto began = std::chrono::steady_clock::now();
  int64_t bytes = 0, samples = 0;
  {
    JobStore store(dir / "podrun.db");
    JobRecord job;
    job.name = "week";
    job.pod = "hosts:" + std::to_string(workers);
    job.spec_text = "run: python3 train.py\n";
    job.spec_path = "week.yaml";
    std::vector<int> indexes;
    for (int w = 0; w < workers; ++w) {
      job.hosts.push_back({.index = w,
                           .user = "u",
                           .host = "h" + std::to_string(w),
                           .port = 22,
                           .address = "10.0.0." + std::to_string(w)});
      indexes.push_back(w);
    }
    job = store.CreateJob(job);
    const int64_t t0 = NowUnixNs();
    const int attempt = store.AddAttempt(job.id, indexes, AttemptReason::kLaunch, t0);
    StepTracker tracker(true, indexes, {});
    std::deque<agent::StepReader> readers;  // not movable: a deque never moves them
    for (int w = 0; w < workers; ++w) readers.emplace_back(kDefaultProgressPattern);
    RunRecords records(store);
    for (int64_t s = 1; s <= seconds; ++s) {
      const int64_t time_ns = t0 + s * 1'000'000'000;
      const std::string line = "step " + std::to_string(s) + ", loss 0.123\n";
      for (int w = 0; w < workers; ++w) readers[w].Add(line, time_ns);
      if (s % 3600 == 0 || s == seconds) {
        for (int w = 0; w < workers; ++w) {
          const agent::v1::StepRecord r = readers[w].TakeRecord(time_ns);
          AgentSteps steps{.step = r.step(),
                           .step_ns = r.step_ns(),
                           .first_step_ns = r.first_step_ns(),
                           .recent = {},
                           .samples = {},
                           .now_ns = time_ns};
          for (const auto& p : r.recent()) steps.recent.push_back({p.time_ns(), p.step()});
          for (const auto& p : r.samples()) steps.samples.push_back({p.time_ns(), p.step()});
          tracker.Update(w, steps);
        }
        tracker.Check(time_ns);
        std::vector<WorkerProgress> progress;
        std::vector<StepSamplesUpdate> updates;
        tracker.TakeChanges(&progress, &updates);
        records.SaveProgress(job.id, attempt, progress, updates);
      }
    }
    for (int w = 0; w < workers; ++w) samples += records.StepSamples(job.id, attempt, w).size();
  }
  // The store is closed: its write-ahead log is folded in, what is left is the record.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) bytes += static_cast<int64_t>(entry.file_size());
  }
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("  %d workers, %.1f days at 1 step/s (%lld lines read in %.1f s)\n", workers, days,
              static_cast<long long>(seconds * workers), took);
  std::printf("  step samples kept: %lld (%.0f per worker; bound %zu per worker and attempt)\n",
              static_cast<long long>(samples), static_cast<double>(samples) / workers,
              agent::StepThinning::kMaxSamples);
  std::printf("  job store on disk: %.1f KiB (with the job, attempt and worker rows)\n",
              static_cast<double>(bytes) / 1024);
  std::filesystem::remove_all(dir);
  return 0;
}
