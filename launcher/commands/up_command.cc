// `podrun up`, `podrun down` (see up_command.h).
#include "launcher/commands/up_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/commands/pod_options.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/recovery/host_keys.h"
#include "launcher/recovery/keeper.h"
#include "launcher/recovery/wait_cancel.h"
#include "launcher/spec/spec.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

constexpr auto kCreatePoll = std::chrono::seconds(10);

// The node named by a spec's pod: section, or by --tpu/--zone/--project (those win).
TpuQuery NodeOf(const std::string& spec_path, const PodSettings& cli, PodSettings* merged) {
  PodSettings settings = cli;
  if (!spec_path.empty()) settings = MergePodSettings(cli, ParseSpecFile(spec_path).pod);
  if (settings.mig) {
    throw UsageError("up and down of a MIG slice (--mig " + *settings.mig +
                     ") are not supported by this podrun yet: make or delete it with gcloud "
                     "(docs/reference.md, \"TPU7x and other Compute Engine slices\")");
  }
  if (!settings.tpu || !settings.zone) {
    throw UsageError("name the node: a spec with pod: {tpu, zone}, or --tpu NAME --zone ZONE");
  }
  if (settings.tpu->find(',') != std::string::npos) {
    throw UsageError("one node at a time: --tpu " + *settings.tpu + " names several");
  }
  if (merged != nullptr) *merged = settings;
  return TpuQuery{*settings.tpu, *settings.zone, settings.project};
}

// Asks `question` on the terminal; true for y or yes.
bool Confirm(const std::string& question) {
  std::cerr << "podrun: " << question << " [y/N] " << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

}  // namespace

namespace {

// Ctrl-C while provisioning: the terminal's SIGINT (to the whole process group) is taken by a
// watcher, not by the default action that would end podrun with gcloud's create in flight. It
// stops the gcloud that runs (it has a group of its own meanwhile) and gives up every wait, so
// that the provisioner deletes the queued resource it made before podrun exits 130.
class ProvisionInterrupts {
 public:
  ProvisionInterrupts() : watcher_([this] { cancel_.Cancel(); }) {}
  TpuWait wait() { return cancel_.AsWait(); }

 private:
  WaitCancel cancel_;
  InterruptWatcher watcher_;  // last: stopped first (SIGINT stays blocked, for the next watcher)
};

}  // namespace

std::vector<TpuQuery> ProvisionSpecNodes(const PodSettings& settings) {
  std::vector<TpuQuery> created;
  if (!settings.create || !settings.tpu || !settings.zone) return created;
  ProvisionInterrupts interrupts;
  for (const std::string& name : SplitTpuNames(*settings.tpu)) {
    const TpuQuery node{name, *settings.zone, settings.project};
    TpuProvisioner provisioner(node, *settings.create, TpuPollInterval(kCreatePoll),
                               interrupts.wait());
    if (provisioner.Ensure().action != TpuNodeAction::kExisted) created.push_back(node);
  }
  return created;
}

ExitCode RunUp(const UpRequest& request) {
  PodSettings settings;
  const TpuQuery node = NodeOf(request.spec_path, request.pod, &settings);
  TpuCreate create = request.create;
  if (!request.spec_path.empty() && request.create.accelerator_type.empty()) {
    if (!settings.create) {
      throw UsageError(request.spec_path +
                       ": its pod: section has no create: (accelerator_type, "
                       "version, ...) to make the node from");
    }
    create = *settings.create;
  }
  if (std::string problem = TpuCreateProblem(create); !problem.empty()) {
    throw UsageError("cannot create " + node.name + ": " + problem);
  }
  if (!request.yes && ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO) && !FindTpuNode(node) &&
      !Confirm(fmt::format("create {}: {}?", DescribeTpuQuery(node), DescribeTpuCreate(create)))) {
    Say("nothing created");
    return ExitCode::kOk;
  }
  ProvisionInterrupts interrupts;
  TpuProvisioner provisioner(node, create, TpuPollInterval(kCreatePoll), interrupts.wait(),
                             {.keep_queued = request.keep_queued});
  const TpuNodeReady ready = provisioner.Ensure();
  std::string workers;
  for (size_t i = 0; i < ready.node.endpoints.size(); ++i) {
    const TpuEndpoint& e = ready.node.endpoints[i];
    workers += fmt::format("{}w{} {}", i ? ", " : "", i, e.external_ip.value_or(e.internal_ip));
  }
  Say(fmt::format("{} is READY{}: {} workers ({})", DescribeTpuQuery(node),
                  ready.action == TpuNodeAction::kExisted ? " (it existed: used as it is)" : "",
                  ready.node.endpoints.size(), workers));
  if (ready.action != TpuNodeAction::kExisted) {
    // New VMs, new host keys: pinned from what they publish, as a launch pins them, so that
    // the first connection (a later launch, exec, ssh) is checked against the API's keys.
    settings.tpu = node.name;
    settings.zone = node.zone;
    settings.project = node.project;
    const Pod pod = ResolvePod(settings);
    PinNodeHostKeys(node, pod.ssh.known_hosts, NodeHostKeyAddresses(pod, node.name));
  }
  return ExitCode::kOk;
}

namespace {

// Ends the keepers of this machine's jobs that run on `node`, so that none recreates it.
void EndKeepersOfNode(const TpuQuery& node) {
  const std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  for (const JobSummary& summary : store.ListJobs()) {
    if (!RecoveryRecords(store).GetKeeper(summary.id)) continue;
    const JobRecord job = store.GetJob(summary.id);
    std::filesystem::path local_root;
    const Pod pod = PodOfJob(job, &local_root);
    for (const TpuQuery& q : pod.tpu_nodes) {
      if (q.name != node.name || q.zone != node.zone) continue;
      if (node.project && q.project && *node.project != *q.project) continue;
      EndKeeper(store, home, job.id,
                fmt::format("ended by podrun down: {} was deleted", DescribeTpuQuery(node)));
    }
  }
}

// Forgets every job's intent to create `node` again (a keeper killed between its delete and its
// create leaves one), so that no later `podrun watch` brings back the node deleted here.
void ClearRecreationIntents(const TpuQuery& node) {
  JobStore store(PodrunHome() / "podrun.db");
  RecoveryRecords records(store);
  for (const JobSummary& summary : store.ListJobs()) {
    for (const RecreationRecord& r : records.Recreations(summary.id)) {
      if (r.node != node.name || r.zone != node.zone) continue;
      if (node.project && !r.project.empty() && *node.project != r.project) continue;
      records.EndRecreation(summary.id, r);
      Say(fmt::format("job {}: it will not create {} again", summary.id, node.name));
    }
  }
}

}  // namespace

ExitCode RunDown(const DownRequest& request) {
  const TpuQuery node = NodeOf(request.spec_path, request.pod, nullptr);
  if (!request.yes) {
    if (!::isatty(STDIN_FILENO)) {
      throw UsageError(fmt::format("podrun down deletes {}: not on a terminal, add -y to confirm",
                                   DescribeTpuQuery(node)));
    }
    if (!Confirm(
            fmt::format("delete {} and its queued resource, if any?", DescribeTpuQuery(node)))) {
      Say("nothing deleted");
      return ExitCode::kOk;
    }
  }
  EndKeepersOfNode(node);        // first: a keeper would create again the node torn down here
  ClearRecreationIntents(node);  // and so would the next podrun watch of a job that meant to
  TpuProvisioner provisioner(node, TpuCreate{}, TpuPollInterval(kCreatePoll),
                             SleepUnlessInterrupted);
  if (!provisioner.Delete()) {
    Say(fmt::format("{} does not exist: nothing to delete", DescribeTpuQuery(node)));
  } else {
    Say(fmt::format("{} deleted", DescribeTpuQuery(node)));
  }
  return ExitCode::kOk;
}

namespace {

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

CommandRun AddUpOptions(CLI::App& app) {
  app.description(
      "Make a Cloud TPU node exist and be READY, through your gcloud: the node of\n"
      "SPEC.yaml's pod: {tpu, zone, create: ...}, or the one the options describe.\n"
      "An existing READY node is used as it is (one of another type or version is an\n"
      "error); a missing one is created (a queued resource with --queued) and waited\n"
      "for, the API's states on the way; a preempted one is created again.\n"
      "Exit: 0 READY, 2 bad usage or a different node, 3 gcloud failed (its words shown).");
  auto request = std::make_shared<UpRequest>();
  app.add_option("spec", request->spec_path, "A job spec whose pod: has tpu, zone and create:");
  AddNodeOptions(app, request->pod);
  app.add_option("--accelerator-type", request->create.accelerator_type, "e.g. v4-32");
  app.add_option("--version", request->create.version, "TPU software version");
  app.add_flag("--spot", request->create.spot, "A spot node");
  app.add_flag("--preemptible", request->create.preemptible, "A preemptible node");
  app.add_flag("--queued", request->create.queued, "Through a queued resource named as the node");
  app.add_flag("--keep-queued", request->keep_queued,
               "Keep the queued resource podrun created when the wait fails or is interrupted "
               "(default: delete it, it holds quota)");
  app.add_flag("-y,--yes", request->yes, "Do not ask before creating");
  app.add_option_function<std::string>(
      "--known-hosts", [request](const std::string& v) { request->pod.known_hosts = v; },
      "Where the new VMs' published host keys are pinned (default: the spec's, else "
      "~/.ssh/known_hosts)");
  app.footer("Example: podrun up examples/checkpointing/podrun.yaml");
  return [request] { return RunUp(*request); };
}

CommandRun AddDownOptions(CLI::App& app) {
  app.description(
      "Delete a Cloud TPU node and its queued resource, through your gcloud: the node\n"
      "of SPEC.yaml's pod: section, or --tpu NAME --zone Z. Asks on a terminal unless\n"
      "-y; elsewhere -y is required. Exit: 0 deleted (or nothing to delete), 3 gcloud\n"
      "failed.");
  auto request = std::make_shared<DownRequest>();
  app.add_option("spec", request->spec_path, "A job spec whose pod: names tpu and zone");
  AddNodeOptions(app, request->pod);
  app.add_flag("-y,--yes", request->yes, "Do not ask");
  app.footer("Example: podrun down --tpu node-1 --zone us-central2-b -y");
  return [request] { return RunDown(*request); };
}

}  // namespace

Command UpCommand() {
  return {"up", "create a TPU node (spec's pod.create) and wait until it is READY", AddUpOptions};
}

Command DownCommand() {
  return {"down", "delete a TPU node and its queued resource", AddDownOptions};
}

}  // namespace podrun
