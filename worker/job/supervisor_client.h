// The agent's side of the per-job supervisor (supervisor.h): starting one, and asking one.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/log_record.h"
#include "proto/unique_fd.h"

namespace podrun::agent {

// What a supervisor is started with.
struct SupervisorLaunch {
  std::filesystem::path binary;  // podrun-agent (the agent's own /proc/self/exe)
  std::filesystem::path home;
  std::string job_id;
  uint32_t attempt = 0;
  std::filesystem::path workdir;  // absolute
  std::string run;
  std::string progress;                    // the progress pattern ("" : none)
  std::map<std::string, std::string> env;  // secrets: wiped by SpawnSupervisor
};

// A supervisor whose job's process waits for GO.
struct SpawnedSupervisor {
  UniqueFd go;        // the agent's end of the go socket (prepared_child.h)
  pid_t job_pid = 0;  // the job's process (its group's leader)
};

// Starts a supervisor in a session of its own (not the agent's child: it outlives the agent),
// hands it the plan, and returns once the job's process waits for GO. Wipes `launch.env`.
// Throws std::runtime_error with the reason (a fork that failed: "fork the job's supervisor: "
// and its errno).
SpawnedSupervisor SpawnSupervisor(SupervisorLaunch& launch);

// Sends one request line to the supervisor with process id `pid` and returns its whole reply;
// nullopt when it cannot be reached (it has exited, or it does not answer in `timeout`).
std::optional<std::string> AskSupervisor(const std::filesystem::path& home, pid_t pid,
                                         std::string_view request,
                                         std::chrono::milliseconds timeout);

// The records the supervisor holds in memory (not on disk) from `from_seq` on; empty when it
// holds none or cannot be reached.
std::vector<LogRecord> FetchHeldRecords(const std::filesystem::path& home, pid_t pid,
                                        uint64_t from_seq);

}  // namespace podrun::agent
