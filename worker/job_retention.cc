// Pruning of finished attempts.
#include "worker/job_retention.h"

#include <system_error>

namespace podrun::agent {

int PruneFinishedJobs(const std::filesystem::path& home, std::chrono::hours keep,
                      std::filesystem::file_time_type now) {
  namespace fs = std::filesystem;
  if (keep.count() <= 0) return 0;
  std::error_code ec;
  const fs::path jobs = home / "jobs";
  if (!fs::is_directory(jobs, ec)) return 0;
  const auto cutoff = now - keep;
  int removed = 0;
  for (const fs::directory_entry& job : fs::directory_iterator(jobs, ec)) {
    if (!job.is_directory(ec)) continue;
    for (const fs::directory_entry& attempt : fs::directory_iterator(job.path(), ec)) {
      const fs::path status = attempt.path() / "exit_status";
      auto written = fs::last_write_time(status, ec);
      if (ec) {
        ec.clear();
        continue;  // no exit status: prepared or running, never pruned
      }
      if (written < cutoff && fs::remove_all(attempt.path(), ec) > 0 && !ec) ++removed;
      ec.clear();
    }
    if (fs::is_empty(job.path(), ec) && !ec) fs::remove(job.path(), ec);
    ec.clear();
  }
  return removed;
}

}  // namespace podrun::agent
