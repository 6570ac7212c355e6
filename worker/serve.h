// `podrun-agent serve`: the agent's lifetime — directories, single instance, the gRPC server
// on its unix socket, the announcement, and the idle exit.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include "worker/jobdir/job_retention.h"

namespace podrun::agent {

inline constexpr auto kDefaultIdleExit = std::chrono::seconds(600);

struct ServeOptions {
  std::filesystem::path home;                               // the agent's directory (DefaultHome())
  std::chrono::seconds idle_exit = kDefaultIdleExit;        // 0: never exit when idle
  bool foreground = false;                                  // don't daemonize (tests)
  std::chrono::hours keep_finished = kDefaultKeepFinished;  // job_retention.h; 0: forever
};

// $HOME/.podrun
std::filesystem::path DefaultHome();
// <home>/run/agent.sock: the only address the agent listens on.
std::filesystem::path AgentSocketPath(const std::filesystem::path& home);

// Runs the agent (or announces the one already serving `home`). Returns the process exit
// code; prints the announcement line on stdout (daemon.h).
int Serve(const ServeOptions& options);

// Version of an agent answering on `socket_path` (Hello with protocol 0), if one does.
struct RunningAgent {
  uint32_t protocol_version = 0;
  std::string agent_version;
  std::string build_id;
  int pid = 0;
};
std::optional<RunningAgent> ProbeAgent(const std::filesystem::path& socket_path);

// Identifies this process's binary by its content (size and CRC-32 of /proc/self/exe): two
// builds differ, two copies of one build do not.
const std::string& BuildId();

// Asks the agent on `socket_path` to hand over (exit, leaving running jobs to their
// supervisors) and waits until its process `pid` is gone; false if it did not go in time.
bool HandOver(const std::filesystem::path& socket_path, int pid);

}  // namespace podrun::agent
