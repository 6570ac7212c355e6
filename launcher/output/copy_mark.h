// CopyMark: how far the launcher's copy of an attempt's log has got (docs/design.md decision
// 21: a driver is replaceable at any moment). Kept beside the copy
// ($PODRUN_HOME/jobs/<id>/<attempt>/copied.mark) and written a few times a second: the size of
// merged.log and of each wK.log, each worker's next sequence number, and the partial lines not
// printed yet. A driver that takes over (a keeper started by `podrun watch`, or after the last
// one was killed) cuts the copies back to that size and resumes every worker at that record, so
// that merged.log holds each line exactly once, whatever instant the last driver died.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/output/line_splitter.h"

namespace podrun {

struct CopyMark {
  struct Worker {
    uint64_t next_seq = 1;   // the first record not in the copies
    uint64_t copy_size = 0;  // of wK.log
    LineSplitter::Held out, err;
    bool operator==(const Worker&) const = default;
  };
  uint64_t merged_size = 0;  // of merged.log
  std::map<int, Worker> workers;
  bool operator==(const CopyMark&) const = default;
};

// The file's content, and back; nullopt when `text` is not a whole mark of this version.
std::string FormatCopyMark(const CopyMark& mark);
std::optional<CopyMark> ParseCopyMark(std::string_view text);

}  // namespace podrun
