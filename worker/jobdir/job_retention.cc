// Pruning of finished attempts.
#include "worker/jobdir/job_retention.h"

#include <sys/types.h>

#include <fstream>
#include <iterator>
#include <string>
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

int RemoveStaleSupervisorSockets(const std::filesystem::path& home) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(home / "run", ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("sup-") || !name.ends_with(".sock")) continue;
    pid_t pid = 0;
    try {
      pid = static_cast<pid_t>(std::stol(name.substr(4, name.size() - 9)));
    } catch (const std::exception&) {
      continue;
    }
    // A live supervisor's command line names its mode; anything else has the pid by chance.
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string args((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
    if (args.find(std::string("supervise\0", 10)) != std::string::npos) continue;
    removed += std::filesystem::remove(entry.path(), ec) ? 1 : 0;
  }
  return removed;
}

}  // namespace podrun::agent
