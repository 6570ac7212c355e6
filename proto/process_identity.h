// ProcessIdentity: a process named so that a recycled pid is never mistaken for it
// (docs/design.md decision 10): its pid, its start time in clock ticks since boot
// (/proc/<pid>/stat, field 22, which exec does not change) and the boot it belongs to
// (/proc/sys/kernel/random/boot_id).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podrun {

struct ProcessIdentity {
  pid_t pid = 0;
  uint64_t start_ticks = 0;
  std::string boot_id;

  // The identity of the live process `pid` now; nullopt if there is none (or only its zombie).
  static std::optional<ProcessIdentity> Of(pid_t pid);
  // Parses ToString()'s "pid start_ticks boot_id"; nullopt if malformed.
  static std::optional<ProcessIdentity> Parse(std::string_view text);
  std::string ToString() const;

  // True while this very process exists and is not a zombie (same pid, start time and boot).
  bool Alive() const;

  bool operator==(const ProcessIdentity&) const = default;
};

// This machine's boot id ("" if unreadable).
const std::string& BootId();

// Process ids of the live (non-zombie) processes of the process group `leader` led, started no
// earlier than it in the same boot: the members a job's leader left behind. Empty when another
// process now has the leader's pid (the group was gone before that pid was reused), so that an
// unrelated process that got the number is never taken for the job's.
std::vector<pid_t> GroupMembersSince(const ProcessIdentity& leader);

// Sends `sig` to the process group led by `leader`, only to processes that belong to it
// (see GroupMembersSince); returns how many were signalled.
int SignalGroup(const ProcessIdentity& leader, int sig);

}  // namespace podrun
