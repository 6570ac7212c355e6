// Starting the agent Mosh-style: detach into the background, hand exactly one announcement
// line back to whoever started it, and serialize simultaneous starts with a lock file.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

#include "proto/protocol_version.h"
#include "proto/unique_fd.h"

namespace podrun::agent {

// The announcement the launcher parses, printed on stdout by `podrun-agent serve`:
//   PODRUN-AGENT READY <protocol_version> <agent_version> <socket path>
//   PODRUN-AGENT ERROR <reason>

// Sends the one announcement line; later calls do nothing (errors after READY go to stderr).
class Announcer {
 public:
  // Writes to (a dup of) stdout.
  Announcer();
  // Writes to `fd`, e.g. the pipe to the original process waiting in Daemonize.
  explicit Announcer(UniqueFd fd) : fd_(std::move(fd)) {}

  void Ready(uint32_t protocol_version, const std::string& agent_version,
             const std::string& socket_path);
  void Error(const std::string& reason);
  bool sent() const { return sent_; }

 private:
  void Send(const std::string& line);

  UniqueFd fd_;
  bool sent_ = false;
};

// Result of Daemonize, in each of the two processes that return from it.
struct Daemonized {
  bool in_daemon = false;  // false: the original process; it should exit with exit_code
  int exit_code = 0;       // 0 if the daemon announced READY
  Announcer announcer;     // in the daemon: the pipe to the waiting original process
};

// Double fork + setsid; the daemon's stdin is /dev/null and its stdout/stderr append to
// `log_file`. The original process waits for the daemon's announcement, prints it on stdout
// and returns (in_daemon false). Call before any thread exists (gRPC included).
Daemonized Daemonize(const std::filesystem::path& log_file);

// An exclusive flock() on a file, released on destruction (or Release()).
class FileLock {
 public:
  // Waits up to `timeout` for the lock; throws std::runtime_error when it cannot be had.
  static FileLock Acquire(const std::filesystem::path& path, std::chrono::milliseconds timeout);
  void Release() { fd_.reset(); }

 private:
  explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace podrun::agent
