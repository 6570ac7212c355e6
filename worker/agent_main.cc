// podrun-agent: the worker agent's entry point — a table of subcommands, each a thin
// parser in front of serve.h / dial_stdio.h.
#include <sys/prctl.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "proto/edit_distance.h"
#include "proto/heap_tuning.h"
#include "proto/private_state.h"
#include "proto/protocol_version.h"
#include "worker/dial_stdio.h"
#include "worker/jobdir/job_dir.h"
#include "worker/serve.h"
#include "worker/stream_log.h"
#include "worker/supervisor/supervisor.h"
#include "worker/sync/binary_relay.h"

namespace podrun::agent {
namespace {

struct Command {
  std::string_view name;
  std::string_view usage;
  std::string_view help;
  std::function<int(const std::vector<std::string>&)> run;
};

int UsageError(const std::string& message, std::string_view usage) {
  std::fprintf(stderr, "podrun-agent: %s\nusage: podrun-agent %.*s\n", message.c_str(),
               static_cast<int>(usage.size()), usage.data());
  return 2;
}

// Parses "--home DIR"; true if `args[*i]` was it (and advances *i).
bool TakeHome(const std::vector<std::string>& args, size_t* i, std::filesystem::path* home,
              std::string* error) {
  if (args[*i] != "--home" && !args[*i].starts_with("--home=")) return false;
  if (args[*i] == "--home") {
    if (*i + 1 >= args.size()) {
      *error = "--home needs a directory";
      return true;
    }
    *home = args[++*i];
  } else {
    *home = args[*i].substr(7);
  }
  return true;
}

int RunServe(const std::vector<std::string>& args) {
  constexpr std::string_view kUsage =
      "serve [--home DIR] [--idle-exit SECONDS] [--keep-days DAYS] [--foreground]";
  ServeOptions options;
  options.home = DefaultHome();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    if (TakeHome(args, &i, &options.home, &error)) {
      if (!error.empty()) return UsageError(error, kUsage);
    } else if (args[i] == "--foreground") {
      options.foreground = true;
    } else if (args[i] == "--idle-exit" && i + 1 < args.size()) {
      char* end = nullptr;
      long seconds = std::strtol(args[++i].c_str(), &end, 10);
      if (*end != '\0' || seconds < 0) return UsageError("bad --idle-exit " + args[i], kUsage);
      options.idle_exit = std::chrono::seconds(seconds);
    } else if (args[i] == "--keep-days" && i + 1 < args.size()) {
      char* end = nullptr;
      long days = std::strtol(args[++i].c_str(), &end, 10);
      if (*end != '\0' || days < 0) return UsageError("bad --keep-days " + args[i], kUsage);
      options.keep_finished = std::chrono::hours(24 * days);
    } else {
      return UsageError("unknown option " + args[i], kUsage);
    }
  }
  options.home = std::filesystem::absolute(options.home);
  // No core dumps and no ptrace or /proc/<pid>/{mem,environ} for other processes of the user:
  // the agent holds jobs' secret_env values while it prepares them.
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    std::perror("podrun-agent: prctl(PR_SET_DUMPABLE)");
  }
  return Serve(options);
}

int RunDialStdio(const std::vector<std::string>& args) {
  constexpr std::string_view kUsage = "dial-stdio [--home DIR]";
  std::filesystem::path home = DefaultHome();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    if (!TakeHome(args, &i, &home, &error)) return UsageError("unknown option " + args[i], kUsage);
    if (!error.empty()) return UsageError(error, kUsage);
  }
  return DialStdio(AgentSocketPath(std::filesystem::absolute(home)));
}

int RunSupervise(const std::vector<std::string>& args) {
  constexpr std::string_view kUsage = "supervise --home DIR --job ID --attempt N";
  SuperviseArgs sup;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    if (TakeHome(args, &i, &sup.home, &error)) {
      if (!error.empty()) return UsageError(error, kUsage);
    } else if (args[i] == "--job" && i + 1 < args.size()) {
      sup.job_id = args[++i];
    } else if (args[i] == "--attempt" && i + 1 < args.size()) {
      sup.attempt = static_cast<uint32_t>(std::strtoul(args[++i].c_str(), nullptr, 10));
    } else {
      return UsageError("unknown option " + args[i], kUsage);
    }
  }
  if (sup.home.empty() || !IsValidJobId(sup.job_id) || sup.attempt == 0) {
    return UsageError("--home, --job and --attempt are needed", kUsage);
  }
  return Supervise(sup);
}

int RunStreamLog(const std::vector<std::string>& args) {
  constexpr std::string_view kUsage =
      "stream-log [--home DIR] --job ID --attempt N [--from SEQ] [--follow] [--compress]";
  StreamLogArgs sl;
  sl.home = DefaultHome();
  for (size_t i = 0; i < args.size(); ++i) {
    std::string error;
    if (TakeHome(args, &i, &sl.home, &error)) {
      if (!error.empty()) return UsageError(error, kUsage);
    } else if (args[i] == "--job" && i + 1 < args.size()) {
      sl.job_id = args[++i];
    } else if (args[i] == "--attempt" && i + 1 < args.size()) {
      sl.attempt = static_cast<uint32_t>(std::strtoul(args[++i].c_str(), nullptr, 10));
    } else if (args[i] == "--from" && i + 1 < args.size()) {
      sl.from_seq = std::strtoull(args[++i].c_str(), nullptr, 10);
    } else if (args[i] == "--follow") {
      sl.follow = true;
    } else if (args[i] == "--compress") {
      sl.compress = true;
    } else {
      return UsageError("unknown option " + args[i], kUsage);
    }
  }
  if (!IsValidJobId(sl.job_id) || sl.attempt == 0) {
    return UsageError("--job and --attempt are needed", kUsage);
  }
  return StreamLog(sl);
}

int RunLend(const std::vector<std::string>& args) {
  constexpr std::string_view kUsage = "lend --address IP [--seconds N] [--clients N]";
  LendArgs sb;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--address" && i + 1 < args.size()) {
      sb.address = args[++i];
    } else if (args[i] == "--seconds" && i + 1 < args.size()) {
      sb.lifetime = std::chrono::seconds(std::strtol(args[++i].c_str(), nullptr, 10));
    } else if (args[i] == "--clients" && i + 1 < args.size()) {
      sb.max_clients = static_cast<int>(std::strtol(args[++i].c_str(), nullptr, 10));
    } else {
      return UsageError("unknown option " + args[i], kUsage);
    }
  }
  if (sb.address.empty() || sb.lifetime.count() <= 0 || sb.max_clients <= 0) {
    return UsageError("--address is needed; --seconds and --clients are positive", kUsage);
  }
  return Lend(sb);
}

int RunVersion(const std::vector<std::string>&) {
  std::printf("podrun-agent %s (protocol %u)\n", PODRUN_VERSION, kProtocolVersion);
  return 0;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"serve", "serve [--home DIR] [--idle-exit SECONDS] [--keep-days DAYS] [--foreground]",
       "start the agent (or find the running one) and print its announcement line", RunServe},
      {"dial-stdio", "dial-stdio [--home DIR]", "copy between stdio and the agent's unix socket",
       RunDialStdio},
      {"supervise", "supervise --home DIR --job ID --attempt N",
       "hold one job attempt's process, log and outcome (started by the agent)", RunSupervise},
      {"stream-log",
       "stream-log [--home DIR] --job ID --attempt N [--from SEQ] [--follow] [--compress]",
       "write a job attempt's log as framed records to stdout (the launcher's bulk log channel)",
       RunStreamLog},
      {"lend", "lend --address IP [--seconds N] [--clients N]",
       "lend this binary to workers that lack it (token on stdin; started by podrun)", RunLend},
      {"--version", "--version", "print the version", RunVersion},
  };
  return commands;
}

int PrintHelp() {
  std::printf("podrun-agent: the podrun worker agent (started by podrun, not by hand)\n\n");
  for (const Command& c : Commands()) {
    std::printf("  podrun-agent %-56.*s %.*s\n", static_cast<int>(c.usage.size()), c.usage.data(),
                static_cast<int>(c.help.size()), c.help.data());
  }
  return 0;
}

int Main(int argc, char** argv) {
  TuneHeapForBuffers();
  RestrictUmask();  // docs/design.md decision 14; jobs get the umask the agent inherited
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintHelp();
    return 2;
  }
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") return PrintHelp();
  const std::string name = args[0];
  args.erase(args.begin());
  for (const Command& c : Commands()) {
    if (c.name == name) return c.run(args);
  }
  std::string message = "unknown command \"" + name + "\"";
  std::vector<std::string_view> names;
  for (const Command& c : Commands()) names.push_back(c.name);
  if (std::string best = Closest(name, names); !best.empty()) {
    message += "; did you mean \"" + best + "\"?";
  }
  std::fprintf(stderr, "podrun-agent: %s (see podrun-agent help)\n", message.c_str());
  return 2;
}

}  // namespace
}  // namespace podrun::agent

int main(int argc, char** argv) { return podrun::agent::Main(argc, argv); }
