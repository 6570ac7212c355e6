// `podrun up`, `podrun down` (see up_command.h).
#include "launcher/commands/up_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <memory>

#include "launcher/attempt/interrupt_watcher.h"
#include "launcher/commands/pod_options.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/say.h"
#include "launcher/pod/tpu_names.h"
#include "launcher/recovery/host_keys.h"
#include "launcher/recovery/keeper.h"
#include "launcher/recovery/provisioner.h"
#include "launcher/recovery/wait_cancel.h"
#include "launcher/spec/spec.h"
#include "launcher/store/podrun_home.h"
#include "launcher/store/recovery_records.h"

namespace podrun {
namespace {

constexpr auto kCreatePoll = std::chrono::seconds(10);

// The slices named by a spec's pod: section (several for a multislice spec), or the one
// --tpu/--mig/--zone/--project name (those win).
std::vector<PodSourceRef> SlicesOf(const std::string& spec_path, const PodSettings& cli,
                                   PodSettings* merged) {
  PodSettings settings = cli;
  if (!spec_path.empty()) settings = MergePodSettings(cli, ParseSpecFile(spec_path).pod);
  const PodSourceKind kind = settings.mig ? PodSourceKind::kMig : PodSourceKind::kTpuNode;
  const std::optional<std::string>& list = settings.mig ? settings.mig : settings.tpu;
  if (!list || !settings.zone) {
    throw UsageError(
        "name the slice: a spec with pod: {tpu or mig, zone}, or --tpu NAME (a TPU node) or "
        "--mig NAME (a MIG slice) with --zone ZONE");
  }
  if (spec_path.empty() && list->find(',') != std::string::npos) {
    throw UsageError(
        fmt::format("one slice at a time: --{} {} names several (a spec names "
                    "all the slices of a multislice job)",
                    PodSourceKindName(kind), *list));
  }
  std::vector<PodSourceRef> out;
  for (const std::string& name : SplitTpuNames(*list)) {
    const SliceRef query{name, *settings.zone, settings.project};
    CheckSliceRef(query);
    out.push_back({kind, query});
  }
  if (merged != nullptr) *merged = settings;
  return out;
}

// The cache of gcloud's answers.
std::filesystem::path CacheDir() { return PodrunHome() / "cache"; }

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
  ProvisionWait wait() { return cancel_.AsWait(); }

 private:
  WaitCancel cancel_;
  InterruptWatcher watcher_;  // last: stopped first (SIGINT stays blocked, for the next watcher)
};

}  // namespace

std::vector<PodSourceRef> ProvisionSpecSlices(PodSettings* settings) {
  std::vector<PodSourceRef> created;
  const PodSourceKind kind = settings->mig ? PodSourceKind::kMig : PodSourceKind::kTpuNode;
  const std::optional<std::string>& list = settings->mig ? settings->mig : settings->tpu;
  if (!settings->create || !list || !settings->zone) return created;
  ProvisionInterrupts interrupts;
  TpuCreate create = *settings->create;
  for (const std::string& name : SplitTpuNames(*list)) {
    const PodSourceRef home{kind, SliceRef{name, *settings->zone, settings->project}};
    const SliceReady ready = MakeProvisioner(home, create, CacheDir(),
                                             ProvisionPollInterval(kCreatePoll), interrupts.wait())
                                 ->Ensure();
    if (ready.where.query.zone != *settings->zone) {
      Say(fmt::format("{} {} lives in zone {} (a fallback zone of {})", PodSourceNoun(kind), name,
                      ready.where.query.zone, *settings->zone));
    }
    // A multislice job's slices stay together: the next ones only in the first one's zone.
    settings->zone = ready.where.query.zone;
    create.fallback_zones.clear();
    if (ready.action != SliceAction::kExisted) created.push_back(ready.where);
  }
  return created;
}

SliceDescribed PinCreatedSlices(const std::vector<PodSourceRef>& created) {
  return [created](const Pod& pod, const PodSourceRef& slice, PodSource& source,
                   const SourceState& state) {
    for (const PodSourceRef& ref : created) {
      if (slice.kind == ref.kind && slice.query.name == ref.query.name) {
        PinSourceHostKeys(source, state, pod);
      }
    }
  };
}

ExitCode RunUp(const UpRequest& request) {
  PodSettings settings;
  const std::vector<PodSourceRef> slices = SlicesOf(request.spec_path, request.pod, &settings);
  const bool mig = slices.front().kind == PodSourceKind::kMig;
  TpuCreate create = request.create;
  if (!request.spec_path.empty() && create == TpuCreate{}) {
    if (!settings.create) {
      throw UsageError(request.spec_path + ": its pod: section has no create: (" +
                       (mig ? "machine_type, topology" : "accelerator_type, version") +
                       ", ...) to make the slice from");
    }
    create = *settings.create;
  }
  if (std::string problem = mig ? MigCreateProblem(create) : TpuCreateProblem(create);
      !problem.empty()) {
    throw UsageError("cannot create " + slices.front().query.name + ": " + problem);
  }
  ProvisionInterrupts interrupts;
  std::vector<PodSourceRef> created;
  std::optional<std::string> together;  // a multislice's slices live in the first one's zone
  for (const PodSourceRef& home : slices) {
    PodSourceRef ref = home;
    if (together) ref.query.zone = *together;
    std::unique_ptr<PodSource> source = MakePodSource(ref, CacheDir());
    if (!request.yes && ::isatty(STDIN_FILENO) && ::isatty(STDERR_FILENO) &&
        source->Now().deleted() &&
        !Confirm(fmt::format("create {}: {}?", source->What(), DescribeTpuCreate(create)))) {
      Say(fmt::format("{}: nothing created", source->What()));
      continue;
    }
    TpuCreate slice_create = create;
    if (together) slice_create.fallback_zones.clear();
    const SliceReady ready =
        MakeProvisioner(ref, slice_create, CacheDir(), ProvisionPollInterval(kCreatePoll),
                        interrupts.wait(), {.keep_queued = request.keep_queued})
            ->Ensure();
    source = MakePodSource(ready.where, CacheDir());
    settings.zone = together = ready.where.query.zone;
    std::string workers;
    for (size_t i = 0; i < ready.state.workers.size(); ++i) {
      const SourceWorker& e = ready.state.workers[i];
      workers += fmt::format("{}w{} {}", i ? ", " : "",
                             e.tpu_worker_number ? std::to_string(*e.tpu_worker_number) : "?",
                             e.external_ip.value_or(e.internal_ip));
    }
    Say(fmt::format("{} is {}{}: {} workers ({})", source->What(), mig ? "RUNNING" : "READY",
                    ready.action == SliceAction::kExisted ? " (it existed: used as it is)" : "",
                    ready.state.workers.size(), workers));
    if (ready.action != SliceAction::kExisted) created.push_back(ready.where);
  }
  if (!created.empty()) {
    // New VMs, new host keys: pinned from what they publish, as a launch pins them, so that
    // the first connection (a later launch, exec, ssh) is checked against the API's keys.
    ResolvePod(settings, PinCreatedSlices(created));
  }
  return ExitCode::kOk;
}

namespace {

// Whether `zone` is one of `zones`.
bool InZones(const std::string& zone, const std::vector<std::string>& zones) {
  return std::find(zones.begin(), zones.end(), zone) != zones.end();
}

// Ends the keepers of this machine's jobs that run on `slice` in any of `zones` (where it may
// live), so that none recreates it.
void EndKeepersOfSlice(const PodSourceRef& slice, const std::vector<std::string>& zones) {
  const SliceRef& node = slice.query;
  const std::filesystem::path home = PodrunHome();
  JobStore store(home / "podrun.db");
  for (const JobSummary& summary : store.ListJobs()) {
    if (!RecoveryRecords(store).GetKeeper(summary.id)) continue;
    const JobRecord job = store.GetJob(summary.id);
    std::filesystem::path local_root;
    const Pod pod = PodOfJob(job, &local_root);
    for (const PodSourceRef& s : PodSourcesOf(pod)) {
      const SliceRef& q = s.query;
      if (s.kind != slice.kind || q.name != node.name || !InZones(q.zone, zones)) continue;
      if (node.project && q.project && *node.project != *q.project) continue;
      EndKeeper(store, home, job.id,
                fmt::format("ended by podrun down: {} {} was deleted", PodSourceNoun(slice.kind),
                            node.name));
    }
  }
}

// Forgets every job's intent to create `node` again (a keeper killed between its delete and its
// create leaves one), in any of `zones`, so that no later `podrun watch` brings back the node
// deleted here.
void ClearRecreationIntents(const SliceRef& node, const std::vector<std::string>& zones) {
  JobStore store(PodrunHome() / "podrun.db");
  RecoveryRecords records(store);
  for (const JobSummary& summary : store.ListJobs()) {
    for (const RecreationRecord& r : records.Recreations(summary.id)) {
      if (r.node != node.name || !InZones(r.zone, zones)) continue;
      if (node.project && !r.project.empty() && *node.project != r.project) continue;
      records.EndRecreation(summary.id, r);
      Say(fmt::format("job {}: it will not create {} again", summary.id, node.name));
    }
  }
}

}  // namespace

ExitCode RunDown(const DownRequest& request) {
  PodSettings settings;
  const std::vector<PodSourceRef> slices = SlicesOf(request.spec_path, request.pod, &settings);
  // A spec's slices may live in its fallback zones: deleted wherever they are.
  const TpuCreate create =
      request.spec_path.empty() ? TpuCreate{} : settings.create.value_or(TpuCreate{});
  std::vector<std::unique_ptr<Provisioner>> provisioners;
  std::string what;
  for (const PodSourceRef& slice : slices) {
    provisioners.push_back(MakeProvisioner(
        slice, create, CacheDir(), ProvisionPollInterval(kCreatePoll), SleepUnlessInterrupted));
    what += (what.empty() ? "" : ", ") + provisioners.back()->What();
  }
  if (!create.fallback_zones.empty()) {
    what += fmt::format(" (in whichever of {} it lives in)",
                        fmt::join(SliceZones(create, slices.front().query.zone), ", "));
  }
  const char* with = slices.front().kind == PodSourceKind::kMig
                         ? "the instance template and workload policy podrun made"
                         : "its queued resource, if any";
  if (!request.yes) {
    if (!::isatty(STDIN_FILENO)) {
      throw UsageError(
          fmt::format("podrun down deletes {}: not on a terminal, add -y to confirm", what));
    }
    if (!Confirm(fmt::format("delete {} and {}?", what, with))) {
      Say("nothing deleted");
      return ExitCode::kOk;
    }
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    const std::vector<std::string> zones = SliceZones(create, slices[i].query.zone);
    EndKeepersOfSlice(slices[i], zones);  // first: a keeper would create again what is torn down
    ClearRecreationIntents(slices[i].query, zones);  // and so would the next podrun watch
    const bool deleted = provisioners[i]->Delete();
    const std::string one = provisioners[i]->What();  // in the zone it lived in
    if (!deleted) {
      Say(fmt::format("{} does not exist: nothing to delete", one));
    } else {
      Say(fmt::format("{} deleted", one));
    }
  }
  return ExitCode::kOk;
}

namespace {

// --tpu or --mig, --zone, --project: one slice (up, down).
void AddNodeOptions(CLI::App& app, PodSettings& pod) {
  app.add_option_function<std::string>(
      "--tpu", [&pod](const std::string& v) { pod.tpu = v; }, "TPU node name");
  app.add_option_function<std::string>(
      "--mig", [&pod](const std::string& v) { pod.mig = v; },
      "MIG slice name (a Compute Engine managed instance group of TPU VMs: v5p, v6e, TPU7x)");
  app.add_option_function<std::string>(
      "--zone", [&pod](const std::string& v) { pod.zone = v; }, "Its zone");
  app.add_option_function<std::string>(
      "--project", [&pod](const std::string& v) { pod.project = v; },
      "Its project (default: gcloud's)");
}

CommandRun AddUpOptions(CLI::App& app) {
  app.description(
      "Make a TPU slice exist and be ready, through your gcloud: the Cloud TPU node\n"
      "(--tpu) or the MIG slice (--mig: workload policy, instance template, group) of\n"
      "SPEC.yaml's pod: {tpu or mig, zone, create: ...}, or the one the options describe.\n"
      "An existing ready slice is used as it is (a node of another type or version is\n"
      "an error); a missing one is created (a queued resource with --queued) and waited\n"
      "for, the API's states on the way; a preempted one is created again. Ctrl-C\n"
      "deletes what it created.\n"
      "Exit: 0 ready, 2 bad usage or a different node, 3 gcloud failed (its words shown).");
  auto request = std::make_shared<UpRequest>();
  app.add_option("spec", request->spec_path,
                 "A job spec whose pod: has tpu or mig, zone and create:");
  AddNodeOptions(app, request->pod);
  app.add_option("--accelerator-type", request->create.accelerator_type, "e.g. v4-32");
  app.add_option("--version", request->create.version, "TPU software version");
  app.add_flag("--spot", request->create.spot, "A spot node");
  app.add_flag("--preemptible", request->create.preemptible, "A preemptible node");
  app.add_flag("--queued", request->create.queued, "Through a queued resource named as the node");
  app.add_option("--machine-type", request->create.machine_type,
                 "MIG slice: the VMs' machine type, e.g. tpu7x-standard-4t");
  app.add_option("--topology", request->create.topology, "MIG slice: e.g. 2x2x4");
  app.add_option("--image-family", request->create.image_family, "MIG slice: boot image family");
  app.add_option("--image-project", request->create.image_project,
                 "MIG slice: the project of --image-family");
  app.add_option("--provisioning", request->create.provisioning,
                 "MIG slice: standard (default), spot or flex_start");
  app.add_option_function<std::string>(
      "--max-run-duration",
      [request](const std::string& v) { request->create.max_run_duration = v; },
      "MIG slice: the VMs are deleted after this long, e.g. 7d (flex_start needs it)");
  app.add_option_function<std::string>(
      "--capacity-wait", [request](const std::string& v) { request->create.capacity_wait = v; },
      "How long a stockout is waited out, e.g. 6h (default 1h)");
  app.add_flag("--keep-queued", request->keep_queued,
               "Keep the queued resource podrun created when the wait fails or is interrupted "
               "(default: delete it, it holds quota)");
  app.add_flag("-y,--yes", request->yes, "Do not ask before creating");
  app.add_option_function<std::string>(
      "--known-hosts", [request](const std::string& v) { request->pod.known_hosts = v; },
      "Where the new VMs' published host keys are pinned (default: the spec's, else "
      "~/.ssh/known_hosts)");
  app.footer(
      "Examples: podrun up examples/checkpointing/podrun.yaml\n"
      "          podrun up --mig slice-1 --zone us-central1-c --machine-type tpu7x-standard-4t \\\n"
      "            --topology 2x2x4 --image-family F --image-project P --provisioning spot");
  return [request] { return RunUp(*request); };
}

CommandRun AddDownOptions(CLI::App& app) {
  app.description(
      "Delete a TPU slice through your gcloud: a Cloud TPU node and its queued resource\n"
      "(--tpu), or a MIG slice's group, then the instance template and workload policy\n"
      "podrun made for it (--mig); the slice of SPEC.yaml's pod: section, or --tpu/--mig\n"
      "NAME --zone Z. The keepers of jobs on it end first. Asks on a terminal unless -y;\n"
      "elsewhere -y is required. Exit: 0 deleted (or nothing to delete), 3 gcloud failed.");
  auto request = std::make_shared<DownRequest>();
  app.add_option("spec", request->spec_path, "A job spec whose pod: names tpu or mig, and zone");
  AddNodeOptions(app, request->pod);
  app.add_flag("-y,--yes", request->yes, "Do not ask");
  app.footer("Example: podrun down --tpu node-1 --zone us-central2-b -y");
  return [request] { return RunDown(*request); };
}

}  // namespace

Command UpCommand() {
  return {"up", "create a TPU node or MIG slice (spec's pod.create) and wait until it is ready",
          AddUpOptions};
}

Command DownCommand() {
  return {"down", "delete a TPU node (and its queued resource) or a MIG slice", AddDownOptions};
}

}  // namespace podrun
