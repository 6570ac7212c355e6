// Tests of starting a supervisor: a fork that fails is reported with its errno, whichever of the
// two forks it is.
#include "worker/job/supervisor_client.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace podrun::agent {
namespace {

// Runs SpawnSupervisor in a child process as `uid`, allowed `max_processes` processes; returns
// what it threw ("" if it did not).
std::string SpawnError(uid_t uid, rlim_t max_processes) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    std::string error;
    const rlimit limit{max_processes, max_processes};
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0 ||
        ::setrlimit(RLIMIT_NPROC, &limit) != 0) {
      error = std::string("setup: ") + std::strerror(errno);
    } else {
      SupervisorLaunch launch;
      launch.binary = PODRUN_AGENT_BINARY;
      launch.home = std::filesystem::temp_directory_path() / "podrun-never-used";
      launch.job_id = "nofork";
      launch.attempt = 1;
      launch.workdir = "/";
      launch.run = "true";
      try {
        SpawnSupervisor(launch);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    (void)!::write(fds[1], error.data(), error.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string error;
  char buf[512];
  for (pollfd p{fds[0], POLLIN, 0}; ::poll(&p, 1, 60'000) > 0;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    error.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ::waitpid(child, nullptr, 0);
  return error;
}

TEST(SpawnSupervisorTest, AFailedForkIsReportedWithItsErrno) {
  if (::geteuid() != 0) GTEST_SKIP() << "running as a uid of its own needs root";
  // A uid nobody uses, so that this test's processes are all it has.
  const uid_t uid = 2'000'000'000u + static_cast<uid_t>(::getpid());
  const std::string eagain = std::strerror(EAGAIN);
  // One process: the first fork fails.
  std::string error = SpawnError(uid, 1);
  EXPECT_NE(error.find("fork the job's supervisor: " + eagain), std::string::npos) << error;
  // Two: the first fork succeeds and the second (the supervisor's own) fails.
  error = SpawnError(uid, 2);
  EXPECT_NE(error.find("fork the job's supervisor: " + eagain), std::string::npos) << error;
}

}  // namespace
}  // namespace podrun::agent
