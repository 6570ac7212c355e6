// A process on this machine driven from the event loop, with streamed stdout/stderr: how
// `podrun exec --local N` runs the command on its N local workers. And the environment every
// process podrun starts for a local worker gets (its agent, or exec's command).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/exit_status.h"
#include "launcher/base/stream.h"

namespace podrun {

namespace asio = boost::asio;

// The part of the launcher's environment a local worker's process inherits: PATH, USER,
// LOGNAME, LANG, LC_*, TERM, TZ, SHELL, TMPDIR and the agent's own PODRUN_AGENT_* knobs, as
// "NAME=value" — nothing else, so that what the user's shell holds (tokens, keys) does not
// reach every local job (a job gets its env, secret_env and -e values through Prepare, as on a
// real worker). PATH is a standard one when `environment` has none. HOME is the caller's to
// add: each local worker has its own. `environment` is a null-terminated array like environ.
std::vector<std::string> LocalWorkerEnvironment(char* const* environment);

// The launcher's own environ, for LocalWorkerEnvironment.
char* const* LauncherEnvironment();

struct LocalCommand {
  std::vector<std::string> argv;           // argv[0] is the path of the program
  std::map<std::string, std::string> env;  // set on top of LocalWorkerEnvironment (HOME here)
  std::string cwd;
};

// Starts the command clean (proto/spawn.h: stdin from /dev/null, its own process group, the
// umask podrun started with), delivers its output to on_data as it comes, and returns how it
// ended. A command that cannot start ends as a shell says it: the reason on stderr, exit code
// 127 (not found) or 126. Throws Error(kUnreachable) if its pipes cannot be made. Event-loop
// thread; on_data is called there.
asio::awaitable<ExitStatus> RunLocalProcess(const LocalCommand& command,
                                            std::function<void(Stream, std::string_view)> on_data);

}  // namespace podrun
