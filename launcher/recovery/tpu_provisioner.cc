// Creating, recreating, deleting and waiting for a TPU node (see tpu_provisioner.h).
#include "launcher/recovery/tpu_provisioner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>

#include "launcher/base/error.h"
#include "launcher/output/live_progress.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/store/podrun_home.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;

bool IsGone(const std::string& state) { return state == "PREEMPTED" || state == "TERMINATED"; }
bool IsQueueDead(const std::string& state) { return state == "SUSPENDED" || state == "FAILED"; }

int64_t NsSince(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count();
}

}  // namespace

bool NeedsRecreation(const std::optional<TpuNode>& node, const std::optional<QueuedResource>& qr) {
  return (node && IsGone(node->state)) || (qr && IsQueueDead(qr->state));
}

std::chrono::seconds TpuPollInterval(std::chrono::seconds fallback) {
  if (const char* env = std::getenv("PODRUN_TPU_POLL_SECONDS")) {
    const int seconds = std::atoi(env);
    if (seconds > 0) return std::chrono::seconds(seconds);
  }
  return fallback;
}

TpuNodeReady TpuProvisioner::Ensure(bool recreate_preempted) {
  const auto began = Clock::now();
  std::optional<TpuNode> node = FindTpuNode(node_);
  std::optional<QueuedResource> qr;
  if (create_.queued || (node && !node->queued_resource.empty())) qr = FindQueuedResource(node_);
  TpuNodeReady ready;
  if (node && (node->accelerator_type != create_.accelerator_type ||
               (!node->runtime_version.empty() && node->runtime_version != create_.version))) {
    throw Error(ExitCode::kUsage,
                fmt::format("{} exists as {}, {}; the spec's create: asks for {}, {}: podrun "
                            "does not replace it (delete it with podrun down, or change create:)",
                            DescribeTpuQuery(node_), node->accelerator_type, node->runtime_version,
                            create_.accelerator_type, create_.version));
  }
  if (NeedsRecreation(node, qr)) {
    const std::string state = node && IsGone(node->state) ? node->state : qr->state;
    if (!recreate_preempted) {
      throw Error(ExitCode::kUnreachable, fmt::format("{} is {}", DescribeTpuQuery(node_), state));
    }
    Say(fmt::format("{} is {}: deleting it and creating it again", DescribeTpuQuery(node_), state));
    return Recreate();
  }
  if (node && node->state == "READY") {
    ready.node = *node;
    return ready;
  }
  if (!node && !qr) {
    Create();
    ready.action = TpuNodeAction::kCreated;
  }
  ready.node = WaitUntilReady();
  ready.waited_seconds = static_cast<double>(NsSince(began)) / 1e9;
  return ready;
}

TpuNodeReady TpuProvisioner::Recreate() {
  const auto began = Clock::now();
  Delete();
  Create();
  TpuNodeReady ready;
  ready.node = WaitUntilReady();
  ready.action = TpuNodeAction::kRecreated;
  ready.waited_seconds = static_cast<double>(NsSince(began)) / 1e9;
  return ready;
}

bool TpuProvisioner::Delete() {
  const std::string what = DescribeTpuQuery(node_);
  bool deleted = false;
  if (FindQueuedResource(node_)) {
    Say(fmt::format("deleting queued resource {} and its node (gcloud)", node_.name));
    RunGcloud(GcloudDeleteQueuedCommand(node_), what);
    deleted = true;
  }
  if (FindTpuNode(node_)) {
    Say(fmt::format("deleting {} (gcloud)", what));
    RunGcloud(GcloudDeleteNodeCommand(node_), what);
    deleted = true;
  }
  ForgetCachedTpuNode(node_, PodrunHome() / "cache");
  return deleted;
}

void TpuProvisioner::Create() {
  const std::string what = DescribeTpuQuery(node_);
  ForgetCachedTpuNode(node_, PodrunHome() / "cache");  // the new node's addresses differ
  Say(fmt::format("creating {}: {}{} (gcloud)", what, DescribeTpuCreate(create_),
                  create_.queued ? fmt::format(" through queued resource {}", node_.name) : ""));
  RunGcloud(create_.queued ? GcloudCreateQueuedCommand(node_, create_)
                           : GcloudCreateNodeCommand(node_, create_),
            what);
}

TpuNode TpuProvisioner::WaitUntilReady() {
  const std::string what = DescribeTpuQuery(node_);
  const auto began = Clock::now();
  LiveProgress live(STDERR_FILENO);
  live.BeginPhase("tpu " + node_.name, {0});
  std::string said;  // the state last said on stderr
  for (;;) {
    std::string state;
    if (create_.queued) {
      std::optional<QueuedResource> qr = FindQueuedResource(node_);
      if (!qr) throw Error(ExitCode::kUnreachable, what + ": its queued resource vanished");
      if (IsQueueDead(qr->state)) {
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: queued resource {} is {} (it expired or could not be "
                                "satisfied): nothing was started",
                                what, qr->name, qr->state));
      }
      state = qr->state;
    }
    if (state.empty() || state == "ACTIVE") {
      std::optional<TpuNode> node = FindTpuNode(node_);
      if (!node && !create_.queued) throw Error(ExitCode::kUnreachable, what + ": it vanished");
      if (node && node->state == "READY") {
        live.End();
        Say(fmt::format("{} READY ({} workers, after {})", what, node->endpoints.size(),
                        FormatDuration(NsSince(began))));
        return *node;
      }
      if (node && IsGone(node->state)) {
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{} is {} before it was ever READY", what, node->state));
      }
      state = node ? node->state : "PROVISIONING";
    }
    live.SetDetail(fmt::format("{} {}", state, FormatDuration(NsSince(began))));
    if (state != said) {
      Say(fmt::format("{}: {} (asking gcloud every {} s)", what, state, poll_.count()));
      said = state;
    }
    if (!wait_(poll_)) {
      throw Error(ExitCode::kInterrupted,
                  fmt::format("interrupted while waiting for {} (it is still {}; podrun down "
                              "deletes it)",
                              what, state));
    }
  }
}

void ForgetHostKeys(const std::string& known_hosts, const std::vector<std::string>& hosts,
                    int port) {
  if (known_hosts.empty() || access(known_hosts.c_str(), F_OK) != 0) return;
  for (const std::string& host : hosts) {
    const std::string name = port == 22 ? host : fmt::format("[{}]:{}", host, port);
    ProgramResult r = RunProgram({"ssh-keygen", "-R", name, "-f", known_hosts});
    if (r.exit_code != 0) {
      Say(fmt::format("warning: could not forget the old host key of {} in {}: {}", name,
                      known_hosts, r.err));
    }
  }
}

void ForgetPodHostKeys(const Pod& pod) {
  std::vector<std::string> hosts;
  for (const PodWorker& w : pod.workers) hosts.push_back(w.host.host);
  ForgetHostKeys(pod.ssh.known_hosts, hosts, pod.ssh.default_port.value_or(22));
}

}  // namespace podrun
