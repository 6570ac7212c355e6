// StepReader: the supervisor's reading of the job's steps (docs/design.md decision 19: steps are
// read where the output is written). It cuts the job's output into lines (a '\n' or a progress
// bar's '\r' ends one; of each line the first kLineBytes are looked at), finds the step in each
// with the plan's progress pattern (proto/progress_pattern.h) and keeps the attempt's record: the
// latest step, a rate window of recent points and the thinned samples (step_thinning.h). Memory
// is bounded whatever the job prints. One thread.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "proto/agent.pb.h"
#include "proto/progress_pattern.h"
#include "worker/supervisor/step_thinning.h"

namespace podrun::agent {

class StepReader {
 public:
  static constexpr size_t kLineBytes = 1024;            // of each line, what the pattern sees
  static constexpr size_t kBlockBytes = 4096;           // lines prefiltered together, looking back
  static constexpr size_t kRecentPoints = 64;           // the rate window's points ...
  static constexpr int64_t kRecentNs = 60'000'000'000;  // ... over the last 60 s

  // `pattern`: the spec's progress ("" : off). Throws std::invalid_argument for a bad one.
  explicit StepReader(const std::string& pattern) : pattern_(pattern) {}

  bool enabled() const { return pattern_.enabled(); }
  // A chunk of the job's output read at `time_ns` from `stream` (0 stdout, 1 stderr: each has its
  // own partial line, so that a line cut by the other stream's output is read whole). Its lines
  // share that time: of those it ends, only the last one holding a step counts.
  void Add(std::string_view data, int64_t time_ns, int stream = 0);
  // The step changed since the last TakeRecord.
  bool changed() const { return changed_; }
  // The record as it stands (clears changed()); `now_ns` is its written_ns.
  v1::StepRecord TakeRecord(int64_t now_ns);

 private:
  void Line(std::string& line, int64_t time_ns);
  // Up to kLineBytes of the current line of its stream.
  static void AppendToLine(std::string& line, std::string_view data);
  void Stepped(int64_t time_ns, int64_t step);

  ProgressPattern pattern_;
  std::string lines_[2];  // each stream's current line's start (at most kLineBytes)
  std::optional<int64_t> step_;
  int64_t step_ns_ = 0, first_step_ns_ = 0;
  std::deque<StepPoint> recent_;
  StepThinning thinning_;
  bool changed_ = false;
};

}  // namespace podrun::agent
