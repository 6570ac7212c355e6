// Tests of a job's usage: parsing /proc/<pid>/stat (a command name with spaces and parentheses),
// choosing the job's processes (its group, descendants in a session of their own, not an earlier
// process or another group), and reading a real process tree that burns CPU.
#include "worker/job/job_usage.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

TEST(JobUsageTest, ParsesProcStat) {
  const auto stat = ParseProcStat(
      "4242 (a (weird) name) S 17 4200 6717 0 -1 4194304 99 0 0 0 150 30 12 8 20 0 1 0 106491 "
      "3133440 416 18446744073709551615 0 0 0 0\n");
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->pid, 4242);
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->ppid, 17);
  EXPECT_EQ(stat->pgrp, 4200);
  EXPECT_EQ(stat->cpu_ticks, 150u + 30 + 12 + 8);
  EXPECT_EQ(stat->start_ticks, 106491u);
  EXPECT_EQ(stat->rss_pages, 416u);
  EXPECT_FALSE(ParseProcStat("4242 (cut) S 17 4200"));
  EXPECT_FALSE(ParseProcStat("no parentheses"));
  EXPECT_FALSE(ParseProcStat(""));
}

ProcStat Proc(pid_t pid, pid_t ppid, pid_t pgrp, uint64_t start, char state = 'S') {
  ProcStat p;
  p.pid = pid;
  p.ppid = ppid;
  p.pgrp = pgrp;
  p.start_ticks = start;
  p.state = state;
  return p;
}

std::vector<pid_t> Pids(const std::vector<ProcStat>& procs) {
  std::vector<pid_t> pids;
  for (const ProcStat& p : procs) pids.push_back(p.pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

TEST(JobUsageTest, TheJobsProcessesAreItsGroupAndTheirDescendants) {
  const ProcessIdentity leader{100, 1000, BootId()};
  const std::vector<ProcStat> all = {
      Proc(1, 0, 1, 1),           // init
      Proc(90, 1, 90, 900),       // the supervisor
      Proc(100, 90, 100, 1000),   // the leader
      Proc(101, 100, 100, 1001),  // a child
      Proc(102, 101, 102, 1002),  // a grandchild that made a session of its own
      Proc(103, 102, 102, 1003, 'Z'),
      Proc(104, 1, 100, 1004),   // reparented, still in the group
      Proc(105, 1, 105, 1005),   // unrelated
      Proc(106, 90, 106, 1006),  // another job
  };
  EXPECT_EQ(Pids(JobProcesses(all, leader)), (std::vector<pid_t>{100, 101, 102, 103, 104}));
  // The leader's pid now belongs to another process: nothing is the job's.
  EXPECT_TRUE(JobProcesses(all, {100, 999, BootId()}).empty());
  EXPECT_TRUE(JobProcesses(all, {100, 1000, "another boot"}).empty());
  // The leader has ended: what is left of its group still counts.
  std::vector<ProcStat> without_leader = all;
  without_leader.erase(without_leader.begin() + 2);
  EXPECT_EQ(Pids(JobProcesses(without_leader, leader)), (std::vector<pid_t>{101, 102, 103, 104}));
}

TEST(JobUsageTest, ReadsARealProcessTree) {
  // A group leader whose child burns CPU in a session of its own; the child's pid comes back
  // through a pipe, so that the test can end it.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    ::setpgid(0, 0);
    const pid_t child = ::fork();
    if (child == 0) {
      ::setsid();
      const auto until = std::chrono::steady_clock::now() + 30s;
      while (std::chrono::steady_clock::now() < until) {
      }
      ::_exit(0);
    }
    (void)!::write(pipe_fds[1], &child, sizeof child);
    while (true) ::pause();
  }
  ::setpgid(leader, leader);
  pid_t child = 0;
  ASSERT_EQ(::read(pipe_fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  const std::optional<ProcessIdentity> id = ProcessIdentity::Of(leader);
  ASSERT_TRUE(id);
  JobUsage first;
  for (int i = 0; i < 200 && first.processes < 2; ++i) {  // until the child has its session
    first = ReadJobUsage(*id);
    std::this_thread::sleep_for(10ms);
  }
  std::this_thread::sleep_for(300ms);
  const JobUsage second = ReadJobUsage(*id);
  ::kill(child, SIGKILL);
  ::kill(-leader, SIGKILL);
  ::waitpid(leader, nullptr, 0);
  EXPECT_EQ(second.processes, 2u);
  EXPECT_GT(second.rss_bytes, 0u);
  EXPECT_GT(second.monotonic_ns, first.monotonic_ns);
  EXPECT_GE(second.cpu_ns, first.cpu_ns + 50'000'000);  // the child burns: its time counts
  EXPECT_TRUE(second.accelerators.empty());
  EXPECT_EQ(ReadJobUsage(*id).processes, 0u);  // reaped: nothing of the job is left
}

}  // namespace
}  // namespace podrun::agent
