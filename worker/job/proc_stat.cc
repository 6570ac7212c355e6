// Reading processes from /proc (see proc_stat.h).
#include "worker/job/proc_stat.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <map>
#include <set>

#include "proto/unique_fd.h"

namespace podrun::agent {
namespace {

bool ToNumber(std::string_view text, auto* out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::string ReadProcFile(const std::string& path, size_t max_bytes) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return "";
  std::string text;
  char buf[4096];
  while (text.size() < max_bytes) {
    const ssize_t n = ::read(fd.get(), buf, std::min(sizeof buf, max_bytes - text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  return ParseProcStat(ReadProcFile("/proc/" + std::to_string(pid) + "/stat"));
}

std::vector<ProcStat> AllProcesses() {
  std::vector<ProcStat> all;
  DIR* proc = ::opendir("/proc");
  if (!proc) return all;
  while (dirent* entry = ::readdir(proc)) {
    pid_t pid = 0;
    if (!ToNumber(std::string_view(entry->d_name), &pid) || pid <= 0) continue;
    if (auto stat = ParseProcStat(ReadProcFile("/proc/" + std::string(entry->d_name) + "/stat"))) {
      all.push_back(*stat);
    }
  }
  ::closedir(proc);
  return all;
}

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat stat;
  if (!ToNumber(text.substr(0, open > 0 ? open - 1 : 0), &stat.pid)) return std::nullopt;
  // Fields from 3 on, space separated.
  std::string_view rest = text.substr(close + 1);
  uint64_t utime = 0, stime = 0;
  int64_t cutime = 0, cstime = 0;  // signed in proc(5)
  int index = 2;
  while (index < 24) {
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    if (rest.empty()) return std::nullopt;
    const size_t space = rest.find_first_of(" \n");
    const std::string_view field = rest.substr(0, space);
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space);
    bool ok = true;
    switch (++index) {
      case 3:
        stat.state = field.empty() ? '?' : field.front();
        break;
      case 4:
        ok = ToNumber(field, &stat.ppid);
        break;
      case 5:
        ok = ToNumber(field, &stat.pgrp);
        break;
      case 14:
        ok = ToNumber(field, &utime);
        break;
      case 15:
        ok = ToNumber(field, &stime);
        break;
      case 16:
        ok = ToNumber(field, &cutime);
        break;
      case 17:
        ok = ToNumber(field, &cstime);
        break;
      case 22:
        ok = ToNumber(field, &stat.start_ticks);
        break;
      case 24: {
        int64_t rss = 0;  // signed in proc(5)
        ok = ToNumber(field, &rss);
        stat.rss_pages = rss > 0 ? static_cast<uint64_t>(rss) : 0;
        break;
      }
      default:
        break;
    }
    if (!ok) return std::nullopt;
  }
  stat.own_cpu_ticks = utime + stime;
  stat.cpu_ticks = utime + stime + static_cast<uint64_t>(std::max<int64_t>(cutime, 0)) +
                   static_cast<uint64_t>(std::max<int64_t>(cstime, 0));
  return stat;
}

std::vector<ProcStat> JobProcesses(const std::vector<ProcStat>& all,
                                   const ProcessIdentity& leader) {
  std::vector<ProcStat> job;
  if (leader.pid <= 0 || leader.boot_id != BootId()) return job;
  std::multimap<pid_t, const ProcStat*> children;
  for (const ProcStat& p : all) {
    // A pid is not reused while a process group of that number has members: another process
    // with the leader's pid means the job's group is gone.
    if (p.pid == leader.pid && p.start_ticks != leader.start_ticks) return job;
    children.emplace(p.ppid, &p);
  }
  std::set<pid_t> taken;
  std::vector<const ProcStat*> todo;
  for (const ProcStat& p : all) {
    if (p.pgrp == leader.pid && p.start_ticks >= leader.start_ticks) todo.push_back(&p);
  }
  while (!todo.empty()) {
    const ProcStat* p = todo.back();
    todo.pop_back();
    if (!taken.insert(p->pid).second) continue;
    job.push_back(*p);
    const auto [begin, end] = children.equal_range(p->pid);
    for (auto it = begin; it != end; ++it) {
      if (it->second->start_ticks >= leader.start_ticks) todo.push_back(it->second);
    }
  }
  return job;
}

}  // namespace podrun::agent
