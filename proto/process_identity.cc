// Reading process identities from /proc (see process_identity.h).
#include "proto/process_identity.h"

#include <dirent.h>
#include <signal.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

namespace podrun {
namespace {

struct StatFields {
  char state = '?';
  pid_t pgrp = 0;
  uint64_t start_ticks = 0;
};

// Fields 3 (state), 5 (pgrp) and 22 (starttime) of /proc/<pid>/stat. The command name (field 2)
// may hold spaces and parentheses: the fields after it follow the last ')'.
std::optional<StatFields> ReadStat(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  const auto paren = line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream rest(line.substr(paren + 1));
  StatFields f;
  std::string field;
  // Field 3 is the first after ')'.
  for (int index = 3; rest >> field; ++index) {
    if (index == 3) f.state = field.empty() ? '?' : field[0];
    if (index == 5) f.pgrp = static_cast<pid_t>(std::stol(field));
    if (index == 22) {
      f.start_ticks = std::stoull(field);
      return f;
    }
  }
  return std::nullopt;
}

}  // namespace

const std::string& BootId() {
  static const std::string boot_id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
  }();
  return boot_id;
}

std::optional<ProcessIdentity> ProcessIdentity::Of(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  try {
    auto stat = ReadStat(pid);
    if (!stat || stat->state == 'Z' || stat->state == 'X') return std::nullopt;
    return ProcessIdentity{pid, stat->start_ticks, BootId()};
  } catch (const std::exception&) {  // a malformed number
    return std::nullopt;
  }
}

std::optional<ProcessIdentity> ProcessIdentity::Parse(std::string_view text) {
  std::istringstream in{std::string(text)};
  ProcessIdentity id;
  if (!(in >> id.pid >> id.start_ticks >> id.boot_id) || id.pid <= 0) return std::nullopt;
  return id;
}

std::string ProcessIdentity::ToString() const {
  return std::to_string(pid) + " " + std::to_string(start_ticks) + " " + boot_id;
}

bool ProcessIdentity::Alive() const {
  if (boot_id != BootId()) return false;  // another boot: nothing of it runs now
  auto now = Of(pid);
  return now && now->start_ticks == start_ticks;
}

std::vector<pid_t> GroupMembersSince(const ProcessIdentity& leader) {
  std::vector<pid_t> members;
  if (leader.boot_id != BootId() || leader.pid <= 0) return members;
  // A pid is not reused while a process group of that number has members. So if another
  // process now has the leader's pid, the job's group was gone before it came: whatever is in
  // group `pid` now is that process's, not the job's.
  if (auto now = ProcessIdentity::Of(leader.pid); now && now->start_ticks != leader.start_ticks) {
    return members;
  }
  DIR* proc = ::opendir("/proc");
  if (!proc) return members;
  while (dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    const char* name = entry->d_name;
    const char* end = name + std::char_traits<char>::length(name);
    if (std::from_chars(name, end, pid).ptr != end || pid <= 0) continue;
    try {
      auto stat = ReadStat(pid);
      if (stat && stat->pgrp == leader.pid && stat->state != 'Z' && stat->state != 'X' &&
          stat->start_ticks >= leader.start_ticks) {
        members.push_back(pid);
      }
    } catch (const std::exception&) {
    }
  }
  ::closedir(proc);
  return members;
}

int SignalGroup(const ProcessIdentity& leader, int sig) {
  if (leader.Alive()) {  // the group's leader is ours: the whole group is the job's
    return ::kill(-leader.pid, sig) == 0 ? 1 : 0;
  }
  int signalled = 0;
  for (pid_t pid : GroupMembersSince(leader)) signalled += ::kill(pid, sig) == 0;
  return signalled;
}

}  // namespace podrun
