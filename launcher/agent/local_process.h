// A process on this machine driven from the event loop, with streamed stdout/stderr: how
// `podrun exec --local N` runs the command on its N local workers.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/output/labelled_output.h"
#include "launcher/ssh/ssh_channel.h"

namespace podrun {

namespace asio = boost::asio;

struct LocalCommand {
  std::vector<std::string> argv;           // argv[0] is the path of the program
  std::map<std::string, std::string> env;  // set on top of this process's environment
  std::string cwd;
};

// Starts the command (stdin from /dev/null, its own process group), delivers its output to
// on_data as it comes, and returns how it ended. Throws Error(kUnreachable) if it cannot start.
asio::awaitable<ExitStatus> RunLocalProcess(const LocalCommand& command,
                                            std::function<void(Stream, std::string_view)> on_data);

}  // namespace podrun
