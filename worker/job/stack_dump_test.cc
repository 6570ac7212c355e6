// Tests of taking stacks for `podrun why`: which processes get one, the tools' command lines,
// a real gdb stack of a sleeping child (which goes on sleeping), and fake tools in a directory of
// their own (only root can write it, wherever the build tree is: tools anywhere else are never
// run): py-spy's output, a failing tool, no tool at all, tools that hang past the deadline
// (stopped with their whole process group, even one that ignores SIGTERM), and a stack dropped
// when its pid names another process by the time the tool is done.
#include "worker/job/stack_dump.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "proto/spawn.h"
#include "worker/job/trusted_program.h"

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

// Until `pid` runs `command` and sleeps (it has been exec'd and reached its sleep): the event
// a stack is taken after.
void AwaitSleeping(pid_t pid, const std::string& command) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (;;) {
    const std::optional<ProcStat> stat = ReadProcStat(pid);
    std::string comm = ReadProcFile("/proc/" + std::to_string(pid) + "/comm", 64);
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (stat && stat->state == 'S' && comm == command) return;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "pid " << pid << " never slept";
    std::this_thread::sleep_for(5ms);
  }
}

// Until `pid` is gone or a zombie.
bool AwaitGone(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::optional<ProcStat> stat = ReadProcStat(pid);
    if (!stat || stat->state == 'Z') return true;
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

// A new directory (0700) for fake tools that, run as root, only root can write from "/" down, as
// tools must be in, wherever the repository was cloned (the build tree may lie in /var/tmp, which
// all can write): in the first of the build tree, the home, /run, /var/lib and "/" whose chain is
// trusted (as not root: the build tree). "" when none can be made.
std::filesystem::path MakeToolDirectory() {
  std::vector<std::filesystem::path> parents = {std::filesystem::current_path()};
  if (::geteuid() == 0) {
    if (const passwd* pw = ::getpwuid(::geteuid()); pw != nullptr && pw->pw_dir[0] == '/') {
      parents.emplace_back(pw->pw_dir);
    }
    parents.insert(parents.end(), {"/run", "/var/lib", "/"});
    std::erase_if(parents, [](const auto& p) { return !IsTrustedDirectory(p.string()); });
  }
  for (const std::filesystem::path& parent : parents) {
    std::string tmpl = (parent / "podrun-stacks-test.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) return tmpl;
  }
  return {};
}

class StackDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeToolDirectory();
    ASSERT_FALSE(dir_.empty()) << "no directory for the fake tools: " << std::strerror(errno);
    ASSERT_TRUE(::geteuid() != 0 || IsTrustedDirectory(dir_))
        << dir_ << ": tools there would never be run";
  }
  void TearDown() override {
    for (pid_t child : children_) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  // A live process (sleep 60, asleep) whose probe names it `command`, with its start time.
  ProcessProbe Live(const std::string& command) {
    const pid_t pid = SpawnProcess({.argv = {"sleep", "60"}});
    children_.push_back(pid);
    AwaitSleeping(pid, "sleep");
    ProcessProbe p = Probe(pid, command);
    p.start_ticks = ReadProcStat(pid)->start_ticks;
    return p;
  }

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
  std::vector<pid_t> children_;
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

// Run from a directory all can write (the repository cloned into /var/tmp, as root), the fake
// tools still get a directory only root can write.
TEST(StackDumpToolDirectoryTest, IsTrustedWhereverTheTestRuns) {
  if (::geteuid() != 0) GTEST_SKIP() << "only root's tools must be in a trusted directory";
  const std::filesystem::path was = std::filesystem::current_path();
  std::string open_tmpl =
      (std::filesystem::temp_directory_path() / "podrun-open-cwd.XXXXXX").string();
  ASSERT_NE(::mkdtemp(open_tmpl.data()), nullptr);
  const std::filesystem::path open = open_tmpl;
  ::chmod(open.c_str(), 01777);
  std::filesystem::current_path(open);
  const std::filesystem::path dir = MakeToolDirectory();
  std::filesystem::current_path(was);
  EXPECT_FALSE(dir.empty());
  EXPECT_TRUE(IsTrustedDirectory(dir.string())) << dir;
  EXPECT_EQ(std::filesystem::perms::owner_all,
            std::filesystem::status(dir).permissions() & std::filesystem::perms::all);
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(open);
}

TEST_F(StackDumpTest, ToolCommandLines) {
  StackTools tools{.py_spy = "/x/py-spy", .gdb = "/usr/bin/gdb"};
  EXPECT_EQ(StackCommand(tools, tools.gdb, 42, 10s),
            (std::vector<std::string>{
                "/usr/bin/gdb", "-p", "42", "-batch", "-nx", "-q", "-iex", "set auto-load off",
                "-iex", "set debuginfod enabled off", "-iex", "set print frame-arguments none",
                "-iex", "set print frame-arguments presence", "-ex", "thread apply all bt 32"}));
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
  if (FindStackTools({.use_sudo = false}).gdb.empty()) GTEST_SKIP() << "no gdb found";
  std::vector<ProcessProbe> procs = {Live("sleep")};
  const pid_t child = procs[0].pid;
  std::string note;
  DumpStacks(&procs, {.timeout = 30s}, &note);
  EXPECT_EQ(note, "");
  EXPECT_EQ(procs[0].stack_tool, "gdb");
  EXPECT_EQ(procs[0].stack_error, "");
  EXPECT_NE(procs[0].stack.find("#0"), std::string::npos) << procs[0].stack;
  EXPECT_NE(procs[0].stack.find("nanosleep"), std::string::npos) << procs[0].stack;
  EXPECT_LE(procs[0].stack.size(), kStackMaxBytes);
  // No argument values: a frame shows at most that it has arguments.
  EXPECT_EQ(procs[0].stack.find("=0x"), std::string::npos) << procs[0].stack;
  // gdb detached (it has exited): the child sleeps on, neither stopped nor traced.
  const std::optional<ProcStat> after = ReadProcStat(child);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->state, 'S');
  const std::string status = ReadProcFile("/proc/" + std::to_string(child) + "/status");
  EXPECT_NE(status.find("TracerPid:\t0\n"), std::string::npos) << status;
}

TEST_F(StackDumpTest, PySpyDumpsPythonProcesses) {
  FakeTool("py-spy", "echo \"Thread 1 (idle): MainThread\"; echo \"    py-spy $*\"");
  std::vector<ProcessProbe> procs = {Live("python3"), Probe(4243, "worker", 'Z')};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(note, "");
  EXPECT_EQ(procs[0].stack_tool, "py-spy");
  EXPECT_EQ(procs[0].stack, "Thread 1 (idle): MainThread\n    py-spy dump --pid " +
                                std::to_string(procs[0].pid) + "\n");
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
  std::vector<ProcessProbe> procs = {Live("trainer")};
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
  EXPECT_EQ(note, "no py-spy or gdb in a directory only root can write: no stacks");
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
    EXPECT_TRUE(AwaitGone(child)) << "pid " << child << " still runs";
  }
}

TEST_F(StackDumpTest, AHangingToolIsKilledAtTheDeadline) {
  ExpectHangingToolsKilled(dir_, /*ignore_term=*/false);
}

TEST_F(StackDumpTest, AToolDeafToSigtermIsKilled) {
  ExpectHangingToolsKilled(dir_, /*ignore_term=*/true);
}

// The tool attached to a pid that, once it is done, names another process (the one asked for
// ended and its pid was reused): what it printed is not that process's stack and is dropped.
TEST_F(StackDumpTest, AStackIsDroppedWhenItsPidIsAnotherProcessOnceTheToolIsDone) {
  FakeTool("gdb", "echo '#0 somebody else'");
  ProcessProbe p = Live("trainer");
  p.start_ticks += 1;  // as if the pid were reused by a process started later
  std::vector<ProcessProbe> procs = {p};
  std::string note;
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(procs[0].stack, "");
  EXPECT_EQ(procs[0].stack_tool, "");
  EXPECT_NE(procs[0].stack_error.find("the stack was dropped"), std::string::npos)
      << procs[0].stack_error;
  // Ended before its tool was done (the tool waits until the kill has taken effect: a loaded
  // machine may run the tool's exit before the killed process's end): dropped too.
  procs = {Live("trainer")};
  const std::string pid = std::to_string(procs[0].pid);
  FakeTool("gdb", "kill -9 " + pid + "; while s=$(cut -d' ' -f3 /proc/" + pid +
                      "/stat 2>/dev/null) && [ \"$s\" != Z ] && [ \"$s\" != X ]; do sleep 0.01; "
                      "done; echo '#0 gone'");
  DumpStacks(&procs, Fakes(), &note);
  EXPECT_EQ(procs[0].stack, "");
  EXPECT_NE(procs[0].stack_error.find("the stack was dropped"), std::string::npos)
      << procs[0].stack_error;
}

// A tool in a directory someone other than root can write (a PATH entry of the user's, the
// system's temporary directory), or a tool owned by another user, is never run.
TEST_F(StackDumpTest, ToolsAreRunOnlyFromDirectoriesOnlyRootCanWrite) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make files of another owner";
  FakeTool("gdb", "echo '#0 trusted'");
  EXPECT_EQ(FindStackTools(Fakes()).gdb, (dir_ / "gdb").string());
  const std::filesystem::path open_dir = dir_ / "open";
  std::filesystem::create_directories(open_dir);
  ::chmod(open_dir.c_str(), 0777);
  std::filesystem::copy_file(dir_ / "gdb", open_dir / "gdb");
  const std::filesystem::path theirs = dir_ / "theirs";
  std::filesystem::create_directories(theirs);
  ASSERT_EQ(0, ::chown(theirs.c_str(), 65534, 65534));
  std::filesystem::copy_file(dir_ / "gdb", theirs / "gdb");
  const std::filesystem::path file_of_another = dir_ / "file";
  std::filesystem::create_directories(file_of_another);
  std::filesystem::copy_file(dir_ / "gdb", file_of_another / "gdb");
  ASSERT_EQ(0, ::chown((file_of_another / "gdb").c_str(), 65534, 65534));
  const std::filesystem::path writable_file = dir_ / "writable";
  std::filesystem::create_directories(writable_file);
  std::filesystem::copy_file(dir_ / "gdb", writable_file / "gdb");
  ::chmod((writable_file / "gdb").c_str(), 0777);
  const std::filesystem::path link = dir_ / "link";
  std::filesystem::create_directories(link);
  std::filesystem::create_symlink(open_dir / "gdb", link / "gdb");
  for (const std::filesystem::path& dir : {open_dir, theirs, file_of_another, writable_file, link,
                                           std::filesystem::temp_directory_path()}) {
    EXPECT_FALSE(IsTrustedProgram((dir / "gdb").string())) << dir;
    StackOptions options = Fakes();
    options.search_dirs = {dir.string()};
    EXPECT_EQ(FindStackTools(options).gdb, "") << dir;
  }
  // An untrusted entry first does not hide a trusted one after it.
  StackOptions options = Fakes();
  options.search_dirs = {open_dir.string(), "relative/bin", dir_.string()};
  EXPECT_EQ(FindStackTools(options).gdb, (dir_ / "gdb").string());
}

}  // namespace
}  // namespace podrun::agent
