// Subcommand table, help, and the top-level error handling of podrun.
#include "launcher/commands/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/base/open_files.h"
#include "launcher/commands/doctor_command.h"
#include "launcher/commands/exec_command.h"
#include "launcher/commands/launch_command.h"
#include "launcher/commands/logs_command.h"
#include "launcher/commands/ls_command.h"
#include "launcher/commands/pod_options.h"
#include "launcher/commands/rerun_command.h"
#include "launcher/commands/status_command.h"
#include "launcher/commands/stop_command.h"
#include "launcher/commands/top_command.h"
#include "launcher/commands/up_command.h"
#include "launcher/commands/version.h"
#include "launcher/commands/watch_command.h"
#include "launcher/connect/pod.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"
#include "proto/edit_distance.h"

namespace podrun {
namespace {

// A handler parses its own arguments (argv[0] is the command's name) and runs the command.
using Handler = std::function<ExitCode(int argc, char** argv)>;

struct Command {
  const char* name;
  const char* summary;
  Handler run;
};

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

ExitCode ExecMain(int argc, char** argv) {
  CLI::App app(
      "Run COMMAND through the login shell on every selected worker, in parallel.\n"
      "Each output line is printed as '[wK] text'. Needs no agent.",
      "podrun exec");
  PodSettings settings;
  AddPodOptions(app, settings);
  ExecRequest request;
  app.add_flag("--json", request.json,
               "One JSON object per worker at the end. Of a stream past 2 MiB it keeps the first "
               "and the last MiB: \"truncated\": true and \"stdout_dropped_bytes\"/"
               "\"stderr_dropped_bytes\" count what was left out between them");
  app.add_flag("--fold", request.fold,
               "Print each distinct line once, labelled with the workers that printed it as\n"
               "ranges ('[w0-3,5] text'), as clush -b does");
  app.add_option("command", request.command,
                 "The command (after --). Its words are joined with spaces, as ssh does, and\n"
                 "the worker's login shell runs the result: -- echo 'a  b' prints 'a b'.\n"
                 "Quote for that shell: -- \"echo 'a  b'\"")
      ->expected(-1);
  app.footer("Example: podrun exec --hosts @pod.txt -w 0-3 -- nproc");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  if (request.command.empty())
    throw UsageError("no command given (podrun exec [OPTIONS] -- COMMAND...)");
  if (request.json && request.fold) throw UsageError("--json and --fold do not go together");
  request.pod = ResolvePod(settings);
  EnsureOpenFiles(request.pod.selected.size());
  return RunExec(request);
}

ExitCode LaunchMain(int argc, char** argv) {
  CLI::App app(
      "Run the job of SPEC.yaml on every worker in lockstep: connect, bootstrap the\n"
      "agent, sync the spec's directory, mount, run the setup (cached), free the\n"
      "accelerators, start everywhere at once, stream the merged log, report.\n"
      "Prints 'job: <id>' first. Ctrl-C stops the job on every worker; losing the\n"
      "launcher any other way leaves it running (see 'podrun logs JOB -f').",
      "podrun launch");
  LaunchRequest request;
  app.add_option("spec", request.spec_path, "The job spec (YAML)")->required();
  AddPodOptions(app, request.pod);
  app.add_option("-n,--name", request.name, "Job name (default: the spec's name)");
  app.add_flag("-d,--detach", request.detach, "Return once every worker has started");
  app.add_option("-e,--env", request.env, "KEY=VALUE for the run process (repeatable)");
  app.add_flag("--force-setup", request.force_setup, "Run setup even when cached");
  app.footer("Example: podrun launch examples/torch-ddp.yaml --local 4 -e EXAMPLES=$PWD/examples");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunLaunch(request);
}

ExitCode LogsMain(int argc, char** argv) {
  CLI::App app(
      "Print the merged log of JOB's latest attempt, from the start, read from the\n"
      "workers' agents (the authoritative copy); works whether or not the launcher\n"
      "still runs. Lines are '[wK] text', stdout lines on stdout, stderr lines on\n"
      "stderr; without -f merged in time order. JOB: an id, a unique prefix of one,\n"
      "or a name (its latest job).\n"
      "Exit: 3 if a worker's agent cannot be reached (the others are printed);\n"
      "with -f, 1 if the process failed or was stopped on a selected worker; else 0.",
      "podrun logs");
  LogsRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name")->required();
  app.add_flag("-f,--follow", request.follow,
               "Keep printing as lines come until every selected worker's process has ended");
  app.add_option("-w,--workers", request.workers, "Only these workers, e.g. 0,2-3 (pod-wide)");
  app.add_flag("--fold", request.fold,
               "Print a line that all selected workers printed alike (at the same line) once, "
               "as '[w0-3] text'");
  bool no_prefix = false;
  app.add_flag("--no-prefix", no_prefix, "Print the text alone, without '[wK] '");
  app.footer("Example: podrun logs bert-base -f -w 0-3 --fold");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  request.prefix = !no_prefix;
  return RunLogs(request);
}

ExitCode StatusMain(int argc, char** argv) {
  CLI::App app(
      "Show JOB's latest attempt per worker: host, state (pending, connecting, setup,\n"
      "running, exited, failed, lost, stopped), exit code (or signal), start and end\n"
      "(local time). Without JOB: the latest job.\n"
      "Workers the store shows as not ended are checked with their agents and the\n"
      "answer recorded (the launcher may be gone, e.g. after --detach). A worker whose\n"
      "agent cannot be reached keeps its recorded state, with the note 'agent\n"
      "unreachable: ...': podrun does not guess that its process is lost.",
      "podrun status");
  StatusRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--json", request.json,
               "One JSON object: job, attempt, workers (worker, host, state, exit_code, signal, "
               "start, end, note)");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunStatus(request);
}

ExitCode StopMain(int argc, char** argv) {
  CLI::App app(
      "Stop JOB's latest attempt on every worker: SIGTERM to its processes, SIGKILL\n"
      "after the grace period. Prints what happened on each worker.\n"
      "Exit: 3 if a worker's agent cannot be reached, else 0.",
      "podrun stop");
  StopRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name")->required();
  int grace = -1;
  app.add_option("--grace", grace,
                 "Seconds between SIGTERM and SIGKILL (default: the spec's grace_seconds)");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  if (app.count("--grace") > 0) request.grace_seconds = grace;
  return RunStop(request);
}

ExitCode LsMain(int argc, char** argv) {
  CLI::App app(
      "List the jobs, newest first: id, name, pod, state (of the latest attempt),\n"
      "attempts, started, duration ('+': still running, as far as the store knows;\n"
      "'podrun status JOB' asks the workers).",
      "podrun ls");
  LsRequest request;
  app.add_flag("--json", request.json, "One JSON array of job objects");
  app.add_option("-n,--limit", request.limit, "At most this many jobs");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunLs(request);
}

ExitCode TopMain(int argc, char** argv) {
  CLI::App app(
      "A live view of JOB's latest attempt, a row per worker, refreshed every second:\n"
      "state, pid, CPU (% of one CPU, the job's whole process tree), resident memory,\n"
      "processes, accelerator devices held open, output rate, seconds since the last\n"
      "output, and the last line. Failed, lost and unreachable workers come first, then\n"
      "the workers silent longest. On a terminal the table is redrawn in place until\n"
      "Ctrl-C (exit 0); into a file or pipe, a plain snapshot is printed every second.\n"
      "Without JOB: the latest job. A worker whose agent cannot be asked gets a row in\n"
      "state 'unreachable' with the error.\n"
      "Exit with --once: 3 if a worker was unreachable, else 0.",
      "podrun top");
  TopRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--once", request.once,
               "Print one snapshot and exit (sampled twice, half a second apart, for the rates)");
  app.add_flag("--json", request.json,
               "One JSON object per worker and line: worker, host, state, pid, cpu_percent, "
               "rss_bytes, processes, accelerators, output_bytes_per_second, silent_seconds, "
               "last_line, error, ...");
  app.footer("Example: podrun top bert-base --once");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunTop(request);
}

ExitCode RerunMain(int argc, char** argv) {
  CLI::App app(
      "Run JOB again as a new attempt, with its recorded spec, hosts and options (no\n"
      "gcloud needed). --failed: only the workers whose process failed, was lost or\n"
      "never started in the latest attempt; their indexes and the counts still describe\n"
      "the whole pod. That fits per-worker work (a setup step, data preparation, shards\n"
      "processed independently); a collective training job needs the whole gang again.\n"
      "Exit codes as for launch.",
      "podrun rerun");
  RerunRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name")->required();
  app.add_flag("--failed", request.failed, "Only the workers that failed in the latest attempt");
  app.add_flag("-d,--detach", request.detach, "Return once every worker has started");
  app.footer("Example: podrun rerun bert-base --failed");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunRerun(request);
}

// --tpu, --zone, --project: one TPU node (up, down).
void AddNodeOptions(CLI::App& app, PodSettings& pod) {
  app.add_option_function<std::string>(
      "--tpu", [&pod](const std::string& v) { pod.tpu = v; }, "TPU node name");
  app.add_option_function<std::string>(
      "--zone", [&pod](const std::string& v) { pod.zone = v; }, "Its zone");
  app.add_option_function<std::string>(
      "--project", [&pod](const std::string& v) { pod.project = v; },
      "Its project (default: gcloud's)");
}

ExitCode UpMain(int argc, char** argv) {
  CLI::App app(
      "Make a Cloud TPU node exist and be READY, through your gcloud: the node of\n"
      "SPEC.yaml's pod: {tpu, zone, create: ...}, or the one the options describe.\n"
      "An existing READY node is used as it is (one of another type or version is an\n"
      "error); a missing one is created (a queued resource with --queued) and waited\n"
      "for, the API's states on the way; a preempted one is created again.\n"
      "Exit: 0 READY, 2 bad usage or a different node, 3 gcloud failed (its words shown).",
      "podrun up");
  UpRequest request;
  app.add_option("spec", request.spec_path, "A job spec whose pod: has tpu, zone and create:");
  AddNodeOptions(app, request.pod);
  app.add_option("--accelerator-type", request.create.accelerator_type, "e.g. v4-32");
  app.add_option("--version", request.create.version, "TPU software version");
  app.add_flag("--spot", request.create.spot, "A spot node");
  app.add_flag("--preemptible", request.create.preemptible, "A preemptible node");
  app.add_flag("--queued", request.create.queued, "Through a queued resource named as the node");
  app.add_flag("--keep-queued", request.keep_queued,
               "Keep the queued resource podrun created when the wait fails or is interrupted "
               "(default: delete it, it holds quota)");
  app.add_flag("-y,--yes", request.yes, "Do not ask before creating");
  app.footer("Example: podrun up examples/checkpointing/podrun.yaml");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunUp(request);
}

ExitCode DownMain(int argc, char** argv) {
  CLI::App app(
      "Delete a Cloud TPU node and its queued resource, through your gcloud: the node\n"
      "of SPEC.yaml's pod: section, or --tpu NAME --zone Z. Asks on a terminal unless\n"
      "-y; elsewhere -y is required. Exit: 0 deleted (or nothing to delete), 3 gcloud\n"
      "failed.",
      "podrun down");
  DownRequest request;
  app.add_option("spec", request.spec_path, "A job spec whose pod: names tpu and zone");
  AddNodeOptions(app, request.pod);
  app.add_flag("-y,--yes", request.yes, "Do not ask");
  app.footer("Example: podrun down --tpu node-1 --zone us-central2-b -y");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunDown(request);
}

ExitCode WatchMain(int argc, char** argv) {
  CLI::App app(
      "Start the keeper of a detached job again (after its machine or keeper died): a\n"
      "process on this machine, detached from the terminal, that follows the job as an\n"
      "attached launch would: stops the gang on a failure, restarts it as restarts:\n"
      "says, recreates a preempted node (pod.create), records it all. One keeper per\n"
      "job at most; 'podrun status JOB' shows it. Run it on an always-on machine.",
      "podrun watch");
  WatchRequest request;
  app.add_option("job", request.job, "Job id, unique id prefix, or name (default: the latest)");
  app.add_flag("--foreground", request.foreground,
               "Be the keeper in this terminal (as an attached launch: Ctrl-C stops the job)");
  app.footer("Example: podrun watch bert-base");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  return RunWatch(request);
}

ExitCode DoctorMain(int argc, char** argv) {
  CLI::App app(
      "Per worker: reachable and authenticated, agent version, clock offset, accelerator\n"
      "devices and the processes holding them, a stale /tmp/libtpu_lockfile, free disk,\n"
      "and a TCMalloc LD_PRELOAD in the login environment. Exit: 3 if a worker cannot be\n"
      "reached, 1 if a problem is left, else 0.",
      "podrun doctor");
  PodSettings settings;
  AddPodOptions(app, settings);
  DoctorRequest request;
  app.add_flag("--fix", request.fix,
               "End the processes holding the accelerators (this user's only), remove a "
               "stale lockfile");
  app.add_flag("--all-users", request.all_users,
               "With --fix: end other users' holders too (needs root on the workers)")
      ->needs("--fix");
  app.add_flag("--json", request.json, "One JSON object per worker");
  app.footer("Example: podrun doctor --tpu node-1 --zone us-central2-b --fix");
  ExitCode help_exit;
  if (!Parse(app, argc, argv, &help_exit)) return help_exit;
  request.pod = ResolvePod(settings);
  EnsureOpenFiles(request.pod.selected.size());
  return RunDoctor(request);
}

ExitCode HelpMain(int argc, char** argv);

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"exec", "run a command on every worker, output labelled [wK]", ExecMain},
      {"launch", "run a job spec on every worker in lockstep, merged logs", LaunchMain},
      {"logs", "print (-f: follow) the merged log of a job", LogsMain},
      {"status", "show a job's state per worker", StatusMain},
      {"stop", "stop a job on every worker", StopMain},
      {"ls", "list jobs, newest first", LsMain},
      {"top", "live per-worker view of a job: CPU, memory, output, silence", TopMain},
      {"rerun", "run a job again (--failed: only the workers that failed)", RerunMain},
      {"up", "create a TPU node (spec's pod.create) and wait until it is READY", UpMain},
      {"down", "delete a TPU node and its queued resource", DownMain},
      {"watch", "start the keeper of a detached job again", WatchMain},
      {"doctor", "check every worker: reachability, accelerators, lockfile, disk", DoctorMain},
      {"help", "show help for podrun or a command", HelpMain},
  };
  return commands;
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
  return command->run(2, args);
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
    return static_cast<int>(command->run(argc - 1, argv + 1));
  } catch (const Error& e) {
    Say(e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    Say(fmt::format("internal error: {}", e.what()));
    return static_cast<int>(ExitCode::kFailed);
  }
}

}  // namespace podrun
