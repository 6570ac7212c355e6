// Tests of local processes (exec --local) and the minimal environment of local workers.
#include "launcher/agent_link/local_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdlib>

#include "launcher/base/error.h"
#include "proto/private_state.h"

namespace podrun {
namespace {

TEST(LocalWorkerEnvironment, KeepsOnlyTheListedVariables) {
  const char* env[] = {"PATH=/opt/bin:/usr/bin",
                       "HOME=/home/me",
                       "USER=me",
                       "LOGNAME=me",
                       "LANG=C.UTF-8",
                       "LC_ALL=C",
                       "LC_TIME=en_GB",
                       "TERM=xterm",
                       "TZ=UTC",
                       "SHELL=/bin/bash",
                       "TMPDIR=/tmp/me",
                       "PODRUN_AGENT_DEBUG=1",
                       "AWS_SECRET_ACCESS_KEY=hunter2",
                       "WANDB_API_KEY=k",
                       "SSH_AUTH_SOCK=/tmp/agent.sock",
                       "PODRUN_TEST_SECRET=s",
                       "PODRUN_HOME=/state",
                       "LD_PRELOAD=/evil.so",
                       "PATHX=y",
                       "NOEQUALS",
                       nullptr};
  std::vector<std::string> out = LocalWorkerEnvironment(const_cast<char* const*>(env));
  std::vector<std::string> expected = {
      "PATH=/opt/bin:/usr/bin", "USER=me",    "LOGNAME=me", "LANG=C.UTF-8",    "LC_ALL=C",
      "LC_TIME=en_GB",          "TERM=xterm", "TZ=UTC",     "SHELL=/bin/bash", "TMPDIR=/tmp/me",
      "PODRUN_AGENT_DEBUG=1"};
  EXPECT_EQ(expected, out);
}

TEST(LocalWorkerEnvironment, GivesAPathWhenThereIsNone) {
  const char* env[] = {"USER=me", nullptr};
  std::vector<std::string> out = LocalWorkerEnvironment(const_cast<char* const*>(env));
  ASSERT_EQ(2u, out.size());
  EXPECT_EQ(0u, out[1].rfind("PATH=/", 0)) << out[1];
}

struct Finished {
  ExitStatus status;
  std::string out, err;
};

Finished RunLocal(const LocalCommand& command) {
  asio::io_context io;
  Finished run;
  auto future =
      asio::co_spawn(io,
                     RunLocalProcess(command,
                                     [&](Stream stream, std::string_view data) {
                                       (stream == Stream::kStdout ? run.out : run.err).append(data);
                                     }),
                     asio::use_future);
  io.run();
  run.status = future.get();
  return run;
}

TEST(RunLocalProcess, BothStreamsExitCodeAndAMinimalEnvironment) {
  ::setenv("PODRUN_LOCAL_PROCESS_TEST_SECRET", "s3cr3t", 1);
  std::string home = ::testing::TempDir();
  Finished run = RunLocal({{"/bin/sh", "-c", "echo out; echo err >&2; env; exit 3"},
                           {{"HOME", home}, {"EXTRA", "x"}},
                           home});
  ::unsetenv("PODRUN_LOCAL_PROCESS_TEST_SECRET");
  ASSERT_TRUE(run.status.exit_code.has_value());
  EXPECT_EQ(3, *run.status.exit_code);
  EXPECT_EQ(0u, run.out.find("out\n")) << run.out;
  EXPECT_EQ("err\n", run.err);
  EXPECT_NE(std::string::npos, run.out.find("\nHOME=" + home + "\n")) << run.out;
  EXPECT_NE(std::string::npos, run.out.find("\nEXTRA=x\n")) << run.out;
  EXPECT_NE(std::string::npos, run.out.find("\nPATH=")) << run.out;
  EXPECT_EQ(std::string::npos, run.out.find("s3cr3t")) << run.out;
}

TEST(RunLocalProcess, RunsWithTheUmaskPodrunWasStartedWith) {
  mode_t inherited = InheritedUmask();
  Finished run = RunLocal({{"/bin/sh", "-c", "umask"}, {}, ""});
  EXPECT_EQ(inherited, static_cast<mode_t>(std::strtol(run.out.c_str(), nullptr, 8))) << run.out;
}

TEST(RunLocalProcess, SignalIsReported) {
  Finished run = RunLocal({{"/bin/sh", "-c", "kill -TERM $$"}, {}, ""});
  EXPECT_FALSE(run.status.exit_code.has_value());
  EXPECT_EQ("TERM", run.status.signal);
}

TEST(RunLocalProcess, AMissingProgramExits127AndSaysSo) {
  Finished run = RunLocal({{"/nonexistent/program"}, {}, ""});
  ASSERT_TRUE(run.status.exit_code.has_value());
  EXPECT_EQ(127, *run.status.exit_code);
  EXPECT_NE(std::string::npos, run.err.find("/nonexistent/program: No such file")) << run.err;
}

TEST(RunLocalProcess, ACommandStartsWithDefaultSignals) {
  // The event loop's thread has SIGINT blocked and SIGPIPE ignored while an attempt runs.
  sigset_t interrupt, old;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &interrupt, &old);
  auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  Finished run = RunLocal({{"/bin/sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"}, {}, ""});
  ::signal(SIGPIPE, old_pipe);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ("SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n", run.out);
}

}  // namespace
}  // namespace podrun
