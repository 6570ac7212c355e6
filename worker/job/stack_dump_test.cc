// Tests of taking stacks for `podrun why`: which processes get one, the tools' command lines,
// a real gdb stack of a sleeping child (which goes on sleeping), and fake tools on a PATH of
// their own: py-spy's output, a failing tool, no tool at all, and tools that hang past the
// deadline (stopped with their whole process group, even one that ignores SIGTERM).
#include "worker/job/stack_dump.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proto/spawn.h"

namespace podrun::agent {
namespace {

using namespace std::chrono_literals;

ProcessProbe Probe(pid_t pid, const std::string& command, char state = 'S') {
  ProcessProbe p;
  p.pid = pid;
  p.command = command;
  p.cmdline = command;
  p.state_code = state;
  return p;
}

class StackDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "stacks.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A fake tool `name` in dir_ running `script` (sh).
  void FakeTool(const std::string& name, const std::string& script) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << "#!/bin/sh\n" << script << "\n";
    ::chmod(path.c_str(), 0700);
  }
  StackOptions Fakes(std::chrono::milliseconds timeout = 5000ms) {
    return {.timeout = timeout, .search_dirs = {dir_.string()}, .use_sudo = false};
  }

  std::filesystem::path dir_;
};

TEST_F(StackDumpTest, ChoosesNonShellProcessesFirstAndNoZombies) {
  std::vector<ProcessProbe> procs = {Probe(10, "bash"), Probe(11, "python3"),
                                     Probe(12, "python3", 'Z'), Probe(13, "sh")};
  EXPECT_EQ(ChooseStackTargets(procs), (std::vector<size_t>{1, 0, 3}));
  for (int i = 0; i < 20; ++i) procs.push_back(Probe(100 + i, "worker"));
  const std::vector<size_t> chosen = ChooseStackTargets(procs);
  ASSERT_EQ(chosen.size(), kMaxStacksPerWorker);
  EXPECT_EQ(chosen.front(), 1u);
  EXPECT_EQ(chosen.back(), 4u + 14);  // python3 and the first 15 workers: no shell fits
}

TEST_F(StackDumpTest, ToolCommandLines) {
  StackTools tools{.py_spy = "/x/py-spy", .gdb = "/usr/bin/gdb"};
  EXPECT_EQ(
      StackCommand(tools, tools.gdb, 42, 10s),
      (std::vector<std::string>{"/usr/bin/gdb", "-p", "42", "-batch", "-nx", "-q", "-iex",
                                "set debuginfod enabled off", "-ex", "thread apply all bt 32"}));
  EXPECT_EQ(StackCommand(tools, tools.py_spy, 42, 10s),
            (std::vector<std::string>{"/x/py-spy", "dump", "--pid", "42"}));
  tools.use_sudo = true;
  tools.sudo = "/usr/bin/sudo";
  tools.timeout = "/usr/bin/timeout";
  EXPECT_EQ(StackCommand(tools, tools.py_spy, 42, 2500ms),
            (std::vector<std::string>{"/usr/bin/sudo", "-n", "/usr/bin/timeout", "-k", "1", "3",
                                      "/x/py-spy", "dump", "--pid", "42"}));
}

TEST_F(StackDumpTest, GdbTakesTheStackOfASleepingChild) {
  if (FindStackTools({.use_sudo = false}).gdb.empty()) GTEST_SKIP() << "no gdb on PATH";
  const pid_t child = SpawnProcess({.argv = {"sleep", "60"}});
  std::this_thread::sleep_for(200ms);
  std::vector<ProcessProbe> procs = {Probe(child, "sleep")};
  std::string note;
  DumpStacks(&procs, {.timeout = 30s}, &note);
  EXPECT_EQ(note, "");
  EXPECT_EQ(procs[0].stack_tool, "gdb");
  EXPECT_EQ(procs[0].stack_error, "");
  EXPECT_NE(procs[0].stack.find("#0"), std::string::npos) << procs[0].stack;
  EXPECT_NE(procs[0].stack.find("nanosleep"), std::string::npos) << procs[0].stack;
  EXPECT_LE(procs[0].stack.size(), kStackMaxBytes);
  // gdb detached: the child sleeps on, neither stopped nor traced.
  std::this_thread::sleep_for(100ms);
  const std::optional<ProcStat> after = ReadProcStat(child);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->state, 'S');
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_F(StackDumpTest, PySpyDumpsPythonProcesses) {
  FakeTool("py-spy", "echo \"Thread 1 (idle): MainThread\"; echo \"    py-spy $*\"");
  std::vector<ProcessProbe> procs = {Probe(4242, "python3"), Probe(4243, "worker", 'Z')};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(note, "");
  EXPECT_EQ(procs[0].stack_tool, "py-spy");
  EXPECT_EQ(procs[0].stack, "Thread 1 (idle): MainThread\n    py-spy dump --pid 4242\n");
  EXPECT_EQ(procs[0].stack_error, "");
  EXPECT_EQ(procs[1].stack_tool, "");
  EXPECT_EQ(procs[1].stack_error, "a zombie has no stack");
}

TEST_F(StackDumpTest, AFailingToolSaysWhy) {
  FakeTool("gdb",
           "echo 'warning: something' >&2; echo 'ptrace: Operation not permitted.' >&2; "
           "exit 1");
  std::vector<ProcessProbe> procs = {Probe(4242, "trainer")};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(procs[0].stack_tool, "");
  EXPECT_EQ(procs[0].stack, "");
  EXPECT_EQ(procs[0].stack_error,
            "gdb failed (exit status 1): warning: something; ptrace: Operation not permitted.");
}

TEST_F(StackDumpTest, ThroughSudoWhenYamaSaysSo) {
  FakeTool("gdb", "echo '#0 not run'");
  FakeTool("sudo", "echo 'sudo: a password is required' >&2; exit 1");
  std::vector<ProcessProbe> procs = {Probe(4242, "trainer")};
  StackOptions options = Fakes();
  options.use_sudo = true;
  const StackTools tools = FindStackTools(options);
  EXPECT_TRUE(tools.use_sudo);
  EXPECT_EQ(tools.sudo, (dir_ / "sudo").string());
  std::string note;
  DumpStacks(&procs, options, &note);
  EXPECT_EQ(procs[0].stack_tool, "");
  EXPECT_EQ(procs[0].stack_error,
            "sudo -n gdb failed (exit status 1): sudo: a password is required");
  // No sudo to be found: the tool runs as it is (and its own error says why if it cannot).
  std::filesystem::remove(dir_ / "sudo");
  EXPECT_FALSE(FindStackTools(options).use_sudo);
}

TEST_F(StackDumpTest, OutputIsCapped) {
  FakeTool("gdb", "echo '#0 frame'; head -c 100000 /dev/zero | tr '\\0' x");
  std::vector<ProcessProbe> procs = {Probe(4242, "trainer")};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(procs[0].stack_tool, "gdb");
  EXPECT_EQ(procs[0].stack.size(), kStackMaxBytes);
  EXPECT_EQ(procs[0].stack_error, "");
}

TEST_F(StackDumpTest, NoToolIsSaidOnce) {
  std::vector<ProcessProbe> procs = {Probe(4242, "trainer"), Probe(4243, "trainer")};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(note, "no py-spy or gdb on PATH: no stacks");
  EXPECT_EQ(procs[0].stack_error, "");
  EXPECT_EQ(procs[1].stack_error, "");
}

// A fake gdb that hangs (its child too, whose pid it writes down); `ignore_term` makes both
// ignore SIGTERM, so that only SIGKILL ends them.
void ExpectHangingToolsKilled(const std::filesystem::path& dir, bool ignore_term) {
  const std::string trap = ignore_term ? "trap '' TERM; " : "";
  {
    const std::filesystem::path path = dir / "gdb";
    std::ofstream(path) << "#!/bin/sh\n"
                        << trap << "sleep 60 & echo $! > " << dir.string() << "/child.$2; wait\n";
    ::chmod(path.c_str(), 0700);
  }
  std::vector<ProcessProbe> procs = {Probe(101, "trainer"), Probe(102, "trainer")};
  std::string note;
  const auto begin = std::chrono::steady_clock::now();
  DumpStacks(&procs, {.timeout = 700ms, .search_dirs = {dir.string()}, .use_sudo = false}, &note);
  const auto took = std::chrono::steady_clock::now() - begin;
  EXPECT_GE(took, 700ms);
  EXPECT_LT(took, 700ms + 3s);
  for (const ProcessProbe& p : procs) {
    EXPECT_EQ(p.stack_error, "gdb timed out after 700 ms");
    EXPECT_EQ(p.stack_tool, "");
    // The tool's child, in its process group, is gone too (or a zombie awaiting its reaper).
    std::ifstream in(dir / ("child." + std::to_string(p.pid)));
    pid_t child = 0;
    ASSERT_TRUE(in >> child);
    std::this_thread::sleep_for(100ms);
    const std::optional<ProcStat> stat = ReadProcStat(child);
    EXPECT_TRUE(!stat || stat->state == 'Z') << "pid " << child << " still runs";
  }
}

TEST_F(StackDumpTest, AHangingToolIsKilledAtTheDeadline) {
  ExpectHangingToolsKilled(dir_, /*ignore_term=*/false);
}

TEST_F(StackDumpTest, AToolDeafToSigtermIsKilled) {
  ExpectHangingToolsKilled(dir_, /*ignore_term=*/true);
}

}  // namespace
}  // namespace podrun::agent
