// The on-disk record of one job attempt on a worker: a contract with users, who read it as
// plain files. Layout, under the agent's home (default ~/.podrun):
//
//   jobs/<job_id>/<attempt>/
//     worker_id      "3\n"        the worker's pod-wide index (written by Prepare)
//     pid            "12345\n"    the job's process, also its process group id (by Start)
//     start_time_ns  "1700000000123456789\n"  wall clock right after the release (GO) (by Start)
//     log            the job's stdout and stderr as sequenced records (proto/log_record.h)
//     supervisor     "pid start_ticks boot_id\n": the job's supervisor (process_identity.h)
//     job_process    "pid start_ticks boot_id\n": the job's process, its group's leader
//     reserve        space the supervisor keeps for the job's own files (freed on a full disk)
//     exit_status    once the process has ended, one "key value" per line:
//                      exit_code 3   or   signal 9   or   never_started 1   or   lost 1
//                      end_time_ns 1700000012345678901
//                      stopped_by_request 0
//                      killed 1            (a requested stop needed SIGKILL)
//                      start_unconfirmed 1 (its start was never confirmed: its supervisor
//                                           stopped it, the launcher lost mid-start)
//     log_gap        only if output could not be written to the log (a full disk):
//                      from_seq 1234 / bytes 567 / chunks 8 / cause No space left on device
//
// Small files are written atomically (temp file + rename). The job's environment, which
// holds secrets, is never written anywhere.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "proto/process_end.h"
#include "proto/process_identity.h"
#include "worker/jobdir/log_gap.h"

namespace podrun::agent {

// True for [A-Za-z0-9._-]{1,128} other than "." and "..".
bool IsValidJobId(std::string_view job_id);

// Paths and files of one job attempt. Cheap to copy; touches the disk only when asked.
class JobDir {
 public:
  // `home` is the agent's directory; job_id must be valid (IsValidJobId).
  JobDir(const std::filesystem::path& home, std::string_view job_id, uint32_t attempt);

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path log_path() const { return path_ / "log"; }
  bool Exists() const;

  // Creates the directory (and parents), mode 0700. Throws std::filesystem::filesystem_error.
  void Create() const;

  // Writers throw std::system_error; readers return nullopt for a missing or unreadable file.
  void WriteWorkerId(uint32_t worker_id) const;
  void WriteStarted(pid_t pid, int64_t start_time_ns) const;  // pid and start_time_ns
  void WriteProcessEnd(const ProcessEnd& status) const;
  std::optional<uint32_t> ReadWorkerId() const;
  std::optional<pid_t> ReadPid() const;
  std::optional<int64_t> ReadStartTime() const;
  std::optional<ProcessEnd> ReadProcessEnd() const;
  void WriteSupervisor(const ProcessIdentity& id) const;
  void WriteJobProcess(const ProcessIdentity& id) const;
  std::optional<ProcessIdentity> ReadSupervisor() const;
  std::optional<ProcessIdentity> ReadJobProcess() const;
  void WriteLogGap(const LogGapInfo& gap) const;
  std::optional<LogGapInfo> ReadLogGap() const;
  std::filesystem::path reserve_path() const { return path_ / "reserve"; }

 private:
  std::filesystem::path path_;
};

}  // namespace podrun::agent
