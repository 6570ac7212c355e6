// `podrun exec` over SSH: one coroutine per worker on one event loop.
#include "launcher/commands/exec_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "launcher/agent_link/local_process.h"
#include "launcher/base/open_files.h"
#include "launcher/commands/pod_options.h"
#include "launcher/output/bounded_capture.h"
#include "launcher/output/control_escape.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/line_splitter.h"
#include "launcher/output/output_groups.h"
#include "launcher/output/say.h"
#include "launcher/persist/held_exec.h"
#include "launcher/persist/holder_client.h"
#include "launcher/pod/worker_range.h"
#include "launcher/ssh/event_loop.h"
#include "launcher/ssh/fan_out.h"
#include "launcher/ssh/jump_hosts.h"
#include "launcher/ssh/ssh_channel.h"
#include "launcher/ssh/ssh_session.h"
#include "launcher/store/podrun_home.h"
#include "proto/shell_quote.h"

namespace podrun {
namespace {

// How often progress states that fell due between chunks of output are printed.
constexpr auto kTickPeriod = std::chrono::milliseconds(100);

// Receives each worker's output: printed as it comes, or kept for --json (bounded: the first
// and the last kJsonHeadBytes/kJsonTailBytes of each stream). Event loop only.
class ExecSink {
 public:
  ExecSink(bool json, bool fold)
      : json_(json),
        fold_(fold),
        printer_(STDOUT_FILENO, STDERR_FILENO, LabelledOutput::ShouldColor(1)) {}

  void Write(WorkerOutcome& outcome, Stream stream, std::string_view data) {
    const int w = outcome.worker;
    if (json_) {
      captured(stream, w).Append(data);
    } else if (fold_ && !unfolded_.count(w)) {
      if (!groups_.Add(w, stream, data)) {  // too much to keep: this worker prints unfolded
        unfolded_.insert(w);
        for (auto& [s, chunk] : groups_.TakeOverflowed(w)) printer_.Write(w, s, chunk);
      }
    } else {
      printer_.Write(w, stream, data);
    }
  }
  void Finish(int worker) {
    if (!json_ && (!fold_ || unfolded_.count(worker))) printer_.Finish(worker);
  }
  void Tick() {
    if (!json_) printer_.Tick();
  }
  // --fold: each distinct output once, labelled with its workers' ranges.
  void PrintGroups() {
    if (!fold_) return;
    const bool color = LabelledOutput::ShouldColor(STDOUT_FILENO);
    for (const OutputGroups::Group& g : groups_.Groups()) {
      const std::string label = "[w" + FormatWorkerRange(g.workers) + "]";
      const std::string prefix = (color ? "\x1b[1m" + label + "\x1b[0m" : label) + " ";
      for (const auto& [fd, text] : {std::pair{STDOUT_FILENO, &g.out}, {STDERR_FILENO, &g.err}}) {
        std::string out;
        LineSplitter splitter;
        auto line = [&](std::string_view l) {
          out += prefix;
          out += ::isatty(fd) == 1 ? EscapeControls(l, scratch_) : l;
          out += '\n';
        };
        splitter.Feed(*text, line);
        splitter.Finish(line);
        WriteAll(fd, out);
      }
    }
  }

  BoundedCapture& captured(Stream stream, int worker) {
    return stream == Stream::kStdout ? stdout_[worker] : stderr_[worker];
  }

 private:
  bool json_, fold_;
  LabelledOutput printer_;
  OutputGroups groups_;     // --fold
  std::set<int> unfolded_;  // --fold: workers whose output was too large to keep
  std::string scratch_;
  std::map<int, BoundedCapture> stdout_, stderr_;
};

// Ticks `sink` until `finished`; the timer is cancelled when it is set.
asio::awaitable<void> TickOutput(asio::steady_timer& timer, const bool& finished, ExecSink& sink) {
  while (!finished) {
    timer.expires_after(kTickPeriod);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    sink.Tick();
  }
}

void SayUnreachable(const PodWorker& worker, WorkerOutcome& outcome, const std::exception& e) {
  outcome.unreachable = true;
  outcome.error = e.what();  // an Error names host and reason already
  Say(fmt::format("w{} ({}): {}", worker.index, worker.host.ToString(), e.what()));
}

void SayLost(const PodWorker& worker, WorkerOutcome& outcome, const std::exception& e) {
  outcome.lost = true;
  outcome.error = e.what();
  Say(fmt::format("w{} ({}): {}", worker.index, worker.host.ToString(), e.what()));
}

// Through the connection holder (persist/held_exec.h): false when it cannot serve this worker
// (absent, gone, refused), and nothing ran: the caller connects on its own.
asio::awaitable<bool> ExecThroughHolder(const PodWorker& worker, const Pod& pod,
                                        const HolderClient& holder, FanOutWindow& window,
                                        const std::string& command, ExecSink& sink,
                                        WorkerOutcome& outcome) {
  std::optional<HeldExec> held;
  try {
    auto slot = co_await window.Acquire();  // the holder's handshake, when it makes one
    held =
        co_await HeldExec::Start(holder.socket(), HolderRequestFor(worker.host, pod.ssh, command));
  } catch (const std::exception& e) {
    SayUnreachable(worker, outcome, e);
    co_return true;
  }
  if (!held) co_return false;
  outcome.host = held->description();
  try {
    outcome.status = co_await held->Drain(
        [&](Stream stream, std::string_view data) { sink.Write(outcome, stream, data); });
    sink.Finish(worker.index);
  } catch (const std::exception& e) {
    sink.Finish(worker.index);
    SayLost(worker, outcome, e);
  }
  co_return true;
}

asio::awaitable<void> ExecOnWorker(const PodWorker& worker, const Pod& pod, FanOutWindow& window,
                                   JumpHosts& jumps, const HolderClient* holder,
                                   const std::string& command, ExecSink& sink,
                                   WorkerOutcome& outcome) {
  if (holder != nullptr &&
      co_await ExecThroughHolder(worker, pod, *holder, window, command, sink, outcome)) {
    co_return;
  }
  std::unique_ptr<SshSession> session;
  try {
    auto slot = co_await window.Acquire();
    session = co_await SshSession::Connect(worker.host, pod.ssh, &jumps);
    slot.Release();
    outcome.host = session->description();
    session->StartKeepalive();
  } catch (const std::exception& e) {
    SayUnreachable(worker, outcome, e);
    co_return;
  }
  try {
    auto channel = co_await SshChannel::Exec(*session, command);
    outcome.status = co_await channel->Drain(
        [&](Stream stream, std::string_view data) { sink.Write(outcome, stream, data); });
    sink.Finish(worker.index);
  } catch (const std::exception& e) {
    sink.Finish(worker.index);
    SayLost(worker, outcome, e);
  }
}

// --local: the command runs in a login shell on this machine, in worker K's own home.
asio::awaitable<void> ExecOnLocalWorker(int index, const std::string& command,
                                        const std::filesystem::path& local_root, ExecSink& sink,
                                        WorkerOutcome& outcome) {
  try {
    std::filesystem::path home = local_root / ("w" + std::to_string(index));
    std::filesystem::create_directories(home);
    LocalCommand local{{"/bin/bash", "-lc", command}, {{"HOME", home.string()}}, home.string()};
    outcome.status = co_await RunLocalProcess(
        local, [&](Stream stream, std::string_view data) { sink.Write(outcome, stream, data); });
  } catch (const std::exception& e) {
    outcome.unreachable = true;
    outcome.error = e.what();
    Say(fmt::format("w{} (local): {}", index, e.what()));
  }
  sink.Finish(index);
}

void PrintJson(const std::vector<WorkerOutcome>& outcomes, ExecSink& sink) {
  for (const WorkerOutcome& o : outcomes) {
    nlohmann::json j;
    j["worker"] = o.worker;
    j["host"] = o.host;
    j["exit_code"] = o.status.exit_code ? nlohmann::json(*o.status.exit_code) : nlohmann::json();
    if (!o.status.signal.empty()) j["signal"] = o.status.signal;
    const BoundedCapture& out = sink.captured(Stream::kStdout, o.worker);
    const BoundedCapture& err = sink.captured(Stream::kStderr, o.worker);
    j["stdout"] = out.text();
    j["stderr"] = err.text();
    // Past 2 MiB a stream keeps its first and last MiB: the count of bytes left out between.
    j["truncated"] = out.dropped_bytes() > 0 || err.dropped_bytes() > 0;
    j["stdout_dropped_bytes"] = out.dropped_bytes();
    j["stderr_dropped_bytes"] = err.dropped_bytes();
    j["error"] = o.error.empty() ? nlohmann::json() : nlohmann::json(o.error);
    WriteAll(STDOUT_FILENO,
             j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
}

}  // namespace

std::string LoginShellCommand(const std::string& command) {
  return "exec \"${SHELL:-/bin/sh}\" -lc " + ShellQuote(command);
}

ExitCode RunExec(const ExecRequest& request) {
  std::string command;
  for (const std::string& word : request.command) {
    if (!command.empty()) command += ' ';
    command += word;
  }
  LocalLoop context;
  FanOutWindow window(context.get_executor(), request.pod.fanout);
  JumpHosts jumps(context.get_executor());  // one connection per jump host, for every worker
  ExecSink sink(request.json, request.fold);
  std::vector<WorkerOutcome> outcomes;
  for (int index : request.pod.selected) {
    WorkerOutcome o;
    o.worker = index;
    o.host = request.pod.workers[index].host.ToString();
    outcomes.push_back(o);
  }
  std::string remote = LoginShellCommand(command);
  bool interrupted = false;
  asio::signal_set signals(context, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (ec) return;
    interrupted = true;
    context.stop();
  });
  size_t remaining = outcomes.size();
  bool finished = remaining == 0;
  asio::steady_timer ticker(context);
  asio::co_spawn(context, TickOutput(ticker, finished, sink), asio::detached);
  std::filesystem::path local_root;
  if (request.pod.local > 0) local_root = PodrunHome() / "local";
  // Connections kept warm (docs/decisions.md, "Warm connections"), unless --no-persist or
  // PODRUN_PERSIST=0; without a holder, fresh connections as always.
  std::optional<HolderClient> holder;
  if (request.persist && request.pod.local == 0) {
    try {
      holder = HolderClient::Reach(PodrunHome());
    } catch (const std::exception&) {  // no state directory: no holder
    }
  }
  // Everything the coroutines below refer to is declared above: on Ctrl-C (context.stop())
  // their frames are still suspended when run() returns, and this destroys them first.
  PendingFramesGuard frames(context);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const PodWorker& worker = request.pod.workers[outcomes[i].worker];
    auto done = [&](const std::exception_ptr&) {
      if (--remaining == 0) {
        jumps.Close();  // its keepalives would keep the loop running
        signals.cancel();
        finished = true;
        ticker.cancel();
      }
    };
    if (request.pod.local > 0) {
      outcomes[i].host = "local";
      asio::co_spawn(context,
                     ExecOnLocalWorker(worker.index, command, local_root, sink, outcomes[i]), done);
    } else {
      asio::co_spawn(context,
                     ExecOnWorker(worker, request.pod, window, jumps, holder ? &*holder : nullptr,
                                  remote, sink, outcomes[i]),
                     done);
    }
  }
  context.run();
  sink.PrintGroups();
  if (interrupted) {
    Say("interrupted");
    return ExitCode::kInterrupted;
  }
  if (request.json) PrintJson(outcomes, sink);
  std::string summary = SummarizeFailures(outcomes);
  if (!summary.empty()) Say(summary);
  return AggregateExitCode(outcomes);
}

namespace {

CommandRun AddExecOptions(CLI::App& app) {
  app.description(
      "Run COMMAND through the login shell on every selected worker, in parallel.\n"
      "Each output line is printed as '[wK] text'. Needs no agent.");
  auto settings = std::make_shared<PodSettings>();
  auto request = std::make_shared<ExecRequest>();
  AddPodOptions(app, *settings);
  app.add_flag("--json", request->json,
               "One JSON object per worker at the end. Of a stream past 2 MiB it keeps the first "
               "and the last MiB: \"truncated\": true and \"stdout_dropped_bytes\"/"
               "\"stderr_dropped_bytes\" count what was left out between them");
  app.add_flag("--fold", request->fold,
               "Print each distinct line once, labelled with the workers that printed it as\n"
               "ranges ('[w0-3,5] text'), as clush -b does");
  app.add_option("command", request->command,
                 "The command (after --). Its words are joined with spaces, as ssh does, and\n"
                 "the worker's login shell runs the result: -- echo 'a  b' prints 'a b'.\n"
                 "Quote for that shell: -- \"echo 'a  b'\"")
      ->expected(-1);
  app.footer("Example: podrun exec --hosts @pod.txt -w 0-3 -- nproc");
  return [settings, request] {
    if (request->command.empty())
      throw UsageError("no command given (podrun exec [OPTIONS] -- COMMAND...)");
    if (request->json && request->fold) throw UsageError("--json and --fold do not go together");
    request->pod = ResolvePod(*settings);
    request->persist = PersistWanted(settings->no_persist);
    EnsureOpenFiles(request->pod.selected.size());
    return RunExec(*request);
  };
}

}  // namespace

Command ExecCommand() {
  return {"exec", "run a command on every worker, output labelled [wK]", AddExecOptions};
}

}  // namespace podrun
