// Subcommand table, help, and the top-level error handling of podrun.
#include "launcher/commands/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/commands/command.h"
#include "launcher/commands/doctor_command.h"
#include "launcher/commands/exec_command.h"
#include "launcher/commands/holder_command.h"
#include "launcher/commands/launch_command.h"
#include "launcher/commands/logs_command.h"
#include "launcher/commands/ls_command.h"
#include "launcher/commands/report_command.h"
#include "launcher/commands/rerun_command.h"
#include "launcher/commands/status_command.h"
#include "launcher/commands/stop_command.h"
#include "launcher/commands/top_command.h"
#include "launcher/commands/why_command.h"
#include "launcher/commands/up_command.h"
#include "launcher/commands/version.h"
#include "launcher/commands/watch_command.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"
#include "launcher/persist/holder_server.h"
#include "proto/edit_distance.h"

namespace podrun {
namespace {

// Parses with CLI11; --help prints and returns 0, a bad option throws Error(kUsage).
// Returns true when the command should run.
bool Parse(CLI::App& app, int argc, char** argv, ExitCode* help_exit) {
  try {
    app.parse(argc, argv);
    return true;
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    *help_exit = ExitCode::kOk;
    return false;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    *help_exit = ExitCode::kOk;
    return false;
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("{} (see '{} --help')", e.what(), app.get_name()));
  }
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      ExecCommand(),
      LaunchCommand(),
      LogsCommand(),
      StatusCommand(),
      StopCommand(),
      LsCommand(),
      TopCommand(),
      WhyCommand(),
      ReportCommand(),
      RerunCommand(),
      UpCommand(),
      DownCommand(),
      WatchCommand(),
      DoctorCommand(),
      {"help", "show help for podrun or a command", nullptr},
  };
  return commands;
}

ExitCode HelpMain(int argc, char** argv);

// Runs `command` with its arguments (argv[0] is the command's name).
ExitCode RunCommand(const Command& command, int argc, char** argv) {
  if (command.add_options == nullptr) return HelpMain(argc, argv);
  CLI::App app("", fmt::format("podrun {}", command.name));
  const CommandRun run = command.add_options(app);
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return run();
}

const Command* FindCommand(const std::string& name) {
  for (const Command& c : Commands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string Usage() {
  std::string out = fmt::format(
      "podrun {} — run one job on every worker of a multi-host accelerator pod\n\n"
      "usage: podrun COMMAND [OPTIONS]\n\ncommands:\n",
      Version());
  for (const Command& c : Commands()) out += fmt::format("  {:<8} {}\n", c.name, c.summary);
  out += "\n'podrun help COMMAND' or 'podrun COMMAND --help' explains a command.\n";
  return out;
}

ExitCode HelpMain(int argc, char** argv) {
  if (argc < 2) {
    std::cout << Usage();
    return ExitCode::kOk;
  }
  const Command* command = FindCommand(argv[1]);
  if (command == nullptr) throw UsageError(fmt::format("unknown command '{}'", argv[1]));
  std::string name = command->name;
  std::string help = "--help";
  char* args[] = {name.data(), help.data()};
  return RunCommand(*command, 2, args);
}

}  // namespace

int Main(int argc, char** argv) {
  try {
    if (argc < 2) {
      WriteAll(STDERR_FILENO, Usage());
      return static_cast<int>(ExitCode::kUsage);
    }
    std::string name = argv[1];
    if (name == "--version" || name == "-V" || name == "version") {
      std::cout << "podrun " << Version() << "\n";
      return 0;
    }
    if (name == "--help" || name == "-h") {
      std::cout << Usage();
      return 0;
    }
    if (name == kHolderCommand) return HolderMain(argc - 1, argv + 1);  // hidden: started by podrun
    const Command* command = FindCommand(name);
    if (command == nullptr) {
      std::string message = fmt::format("unknown command '{}'", name);
      std::vector<std::string_view> names;
      for (const Command& c : Commands()) names.push_back(c.name);
      if (std::string best = Closest(name, names); !best.empty()) {
        message += fmt::format(" (did you mean '{}'?)", best);
      }
      throw UsageError(message + "; run 'podrun help' for the list");
    }
    return static_cast<int>(RunCommand(*command, argc - 1, argv + 1));
  } catch (const Error& e) {
    Say(e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    Say(fmt::format("internal error: {}", e.what()));
    return static_cast<int>(ExitCode::kFailed);
  }
}

}  // namespace podrun
