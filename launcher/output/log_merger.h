// LogMerger: where the records streamed from every worker's agent meet. It prints them as
// labelled lines (each line whole, stdout to stdout, stderr to stderr), keeps the launcher's
// copies under $PODRUN_HOME/jobs/<id>/<attempt>/ (merged.log: the labelled lines; wK.log: what
// worker K printed, as plain text), and remembers each worker's last lines for the failure
// report. Thread-safe.
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "launcher/output/labelled_output.h"
#include "proto/log_record.h"
#include "proto/unique_fd.h"

namespace podrun {

class LogMerger {
 public:
  // `dir`: where the launcher's copies go (created); empty: keep no copies.
  LogMerger(const std::filesystem::path& dir, bool color, bool prefix = true);

  // Prints and stores a batch of `worker`'s records (in sequence order).
  void Add(int worker, const std::vector<LogRecord>& records);
  // Prints a final partial line of `worker`, if any.
  void Finish(int worker);
  // The last (at most 10) complete lines `worker` printed, stdout and stderr alike.
  std::vector<std::string> LastLines(int worker) const;

 private:
  static constexpr size_t kTailLines = 10;
  static constexpr size_t kTailBytes = 8192;

  mutable std::mutex mutex_;
  std::filesystem::path dir_;
  LabelledOutput screen_;
  UniqueFd merged_fd_;
  std::map<int, UniqueFd> worker_fds_;
  std::map<int, std::string> tails_;  // the last kTailBytes..2*kTailBytes bytes per worker
};

}  // namespace podrun
