// Tests of process identities: a recycled pid (same pid, another start time) or another boot is
// never taken for the process, and group members are found only among the group's own.
#include "proto/process_identity.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

namespace podrun {
namespace {

TEST(ProcessIdentityTest, NamesALiveProcessAndRoundTrips) {
  auto self = ProcessIdentity::Of(::getpid());
  ASSERT_TRUE(self);
  EXPECT_EQ(self->pid, ::getpid());
  EXPECT_GT(self->start_ticks, 0u);
  EXPECT_EQ(self->boot_id, BootId());
  EXPECT_FALSE(BootId().empty());
  EXPECT_TRUE(self->Alive());
  EXPECT_EQ(ProcessIdentity::Parse(self->ToString()), self);
  EXPECT_FALSE(ProcessIdentity::Parse("12 x"));
  EXPECT_FALSE(ProcessIdentity::Parse(""));
  EXPECT_FALSE(ProcessIdentity::Parse("0 5 boot"));
}

TEST(ProcessIdentityTest, ARecycledPidOrAnotherBootIsNotTheProcess) {
  auto self = ProcessIdentity::Of(::getpid());
  ASSERT_TRUE(self);
  ProcessIdentity recycled = *self;
  recycled.start_ticks += 1;  // the same pid, started at another time: another process
  EXPECT_FALSE(recycled.Alive());
  ProcessIdentity other_boot = *self;
  other_boot.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_FALSE(other_boot.Alive());
  EXPECT_FALSE(ProcessIdentity::Of(-1));
}

TEST(ProcessIdentityTest, AnEndedProcessIsGoneEvenAsAZombie) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto id = ProcessIdentity::Of(child);
  ASSERT_TRUE(id);
  EXPECT_TRUE(id->Alive());
  ::kill(child, SIGKILL);
  // Until reaped it is a zombie: not alive.
  for (int i = 0; i < 500 && id->Alive(); ++i) ::usleep(2000);
  EXPECT_FALSE(id->Alive());
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(id->Alive());
}

TEST(ProcessIdentityTest, SignalGroupReachesOnlyTheGroupsMembers) {
  // A leader of its own group with one member; the leader exits, the member stays.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t leader = ::fork();
  ASSERT_GE(leader, 0);
  if (leader == 0) {
    ::setpgid(0, 0);
    const pid_t member = ::fork();
    if (member == 0) {
      ::close(ready[0]);
      ::close(ready[1]);
      ::pause();
      ::_exit(0);
    }
    (void)!::write(ready[1], &member, sizeof member);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  pid_t member = 0;
  ASSERT_EQ(::read(ready[0], &member, sizeof member), static_cast<ssize_t>(sizeof member));
  ::close(ready[0]);
  auto leader_id = ProcessIdentity::Of(leader);
  ASSERT_TRUE(leader_id);
  auto members = GroupMembersSince(*leader_id);
  EXPECT_NE(std::find(members.begin(), members.end(), member), members.end());
  EXPECT_EQ(std::find(members.begin(), members.end(), ::getpid()), members.end());

  // A record with the wrong start time names no live process: nothing is signalled.
  ProcessIdentity stale = *leader_id;
  stale.start_ticks += 100000;  // "started" after every member: none is the record's
  EXPECT_EQ(SignalGroup(stale, SIGKILL), 0);
  EXPECT_EQ(::kill(leader, 0), 0);
  EXPECT_EQ(::kill(member, 0), 0);

  // The real identity reaches the whole group.
  EXPECT_EQ(SignalGroup(*leader_id, SIGKILL), 1);
  ::waitpid(leader, nullptr, 0);
  for (int i = 0; i < 500 && ::kill(member, 0) == 0; ++i) ::usleep(2000);  // init reaps it
  EXPECT_TRUE(GroupMembersSince(*leader_id).empty());
}

}  // namespace
}  // namespace podrun
