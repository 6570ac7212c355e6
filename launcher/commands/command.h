// One podrun command as the command table (cli.cc) holds it: its name, its one-line help, and
// what registers its description, options and footer on its CLI11 app and then runs it. Each
// command's own file makes its entry (ExecCommand() in exec_command.h, ...).
#pragma once

#include <functional>

#include "launcher/base/error.h"

namespace CLI {
class App;
}  // namespace CLI

namespace podrun {

// Runs a command once its command line has been parsed into what its options fill; returns its
// exit code. Throws Error (UsageError for bad usage found after parsing) as the command does.
using CommandRun = std::function<ExitCode()>;

struct Command {
  const char* name;     // as typed: "exec"
  const char* summary;  // its line in `podrun help`
  // Sets the description and footer of `app` (named "podrun NAME"), registers the command's
  // options on it and returns the run, which reads what they filled. Null for `help`, which
  // cli.cc runs itself.
  CommandRun (*add_options)(CLI::App& app);
};

}  // namespace podrun
