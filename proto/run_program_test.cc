// RunProgram: output collected whole, and a Ctrl-C noted while it waits stops the program.
#include "proto/run_program.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proto/interrupt_note.h"

namespace podrun {
namespace {

TEST(RunProgram, CollectsOutputAndExitCode) {
  ProgramResult r = RunProgram({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(3, r.exit_code);
  EXPECT_EQ("out\n", r.out);
  EXPECT_EQ("err\n", r.err);
  EXPECT_FALSE(r.interrupted);
  ProgramResult missing = RunProgram({"podrun-no-such-program"});
  EXPECT_EQ(-1, missing.exit_code);
  EXPECT_EQ("cannot run podrun-no-such-program: not found on PATH", missing.err);
}

TEST(RunProgram, ANotedInterruptStopsTheProgramsGroupAtOnce) {
  const auto pid_file =
      std::filesystem::temp_directory_path() / ("run_program_test." + std::to_string(::getpid()));
  SetInterruptsNoted(true);  // as while an InterruptWatcher lives
  // The shell starts a grandchild too: the whole group is stopped.
  std::thread interrupter([&] {
    for (int i = 0; i < 200 && !std::filesystem::exists(pid_file); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    NoteInterrupt();
  });
  const auto began = std::chrono::steady_clock::now();
  ProgramResult r = RunProgram({"sh", "-c",
                                "sleep 30 & echo $! > " + pid_file.string() + ".sleep; echo $$ > " +
                                    pid_file.string() + "; wait"});
  const auto took = std::chrono::steady_clock::now() - began;
  interrupter.join();
  SetInterruptsNoted(false);

  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(128 + SIGTERM, r.exit_code);
  EXPECT_LT(took, std::chrono::seconds(1));
  pid_t shell = 0, sleeper = 0;
  std::ifstream(pid_file) >> shell;
  std::ifstream(pid_file.string() + ".sleep") >> sleeper;
  ASSERT_GT(shell, 0);
  ASSERT_GT(sleeper, 0);
  EXPECT_EQ(-1, ::kill(shell, 0));  // reaped
  EXPECT_EQ(ESRCH, errno);
  // The grandchild got SIGTERM too (it is reaped by init, so give it a moment).
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream stat("/proc/" + std::to_string(sleeper) + "/stat");
    std::string line;
    gone = !std::getline(stat, line) || line.find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "sleep " << sleeper << " still runs";
  std::filesystem::remove(pid_file);
  std::filesystem::remove(pid_file.string() + ".sleep");
}

TEST(RunProgram, AnInterruptBeforeTheStartDoesNotStopIt) {
  NoteInterrupt();  // an earlier Ctrl-C: a cleanup after it still runs its programs
  ProgramResult r = RunProgram({"sh", "-c", "sleep 0.2; echo done"});
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(0, r.exit_code);
  EXPECT_EQ("done\n", r.out);
}

TEST(RunProgram, AProgramPastItsDeadlineIsStoppedAndSaysSo) {
  auto began = std::chrono::steady_clock::now();
  ProgramResult r = RunProgramWithin({"sleep", "30"}, std::chrono::milliseconds(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(128 + SIGTERM, r.exit_code);
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(5));
  // One that ignores SIGTERM gets SIGKILL after the grace; output it wrote before is kept.
  began = std::chrono::steady_clock::now();
  r = RunProgramWithin({"sh", "-c", "trap '' TERM; echo begun; while :; do sleep 0.1; done"},
                       std::chrono::milliseconds(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(128 + SIGKILL, r.exit_code);
  EXPECT_EQ("begun\n", r.out);
  EXPECT_LT(std::chrono::steady_clock::now() - began,
            kInterruptedProgramGrace + std::chrono::seconds(5));
  // Within its deadline, a program is left alone.
  r = RunProgramWithin({"sh", "-c", "echo ok"}, std::chrono::seconds(30));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(0, r.exit_code);
}

}  // namespace
}  // namespace podrun
