// Provisioning through gcloud (see tpu_gcloud.h).
#include "launcher/pod/tpu_gcloud.h"

#include <fmt/format.h>

#include <cstdlib>

#include "launcher/base/error.h"
#include "launcher/pod/tpu_names.h"
#include "proto/run_program.h"

namespace podrun {
namespace {

// gcloud's words for a resource that does not exist.
constexpr const char* kNotFound = "NOT_FOUND";

// Every command names the node first: checked here, before it reaches an argv.
void AddLocation(std::vector<std::string>& argv, const TpuQuery& node) {
  CheckTpuQuery(node);
  argv.insert(argv.end(), {"--zone", node.zone});
  if (node.project) argv.insert(argv.end(), {"--project", *node.project});
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// "WHAT: `gcloud ... VERB` failed (exit N):\n<gcloud's stderr>", or, after a Ctrl-C,
// "WHAT: interrupted: `gcloud ... VERB` stopped" (exit 130).
Error FailureOf(const std::vector<std::string>& argv, const ProgramResult& r,
                const std::string& what) {
  const std::string message = Trimmed(r.err);
  const std::string verb = argv.size() > 4 ? argv[3] + " " + argv[4] : "";
  if (r.interrupted) {
    return Error(ExitCode::kInterrupted,
                 fmt::format("{}: interrupted: `{} ... {}` stopped", what, argv[0], verb));
  }
  return Error(ExitCode::kUnreachable,
               fmt::format("{}: `{} ... {}` failed{}{}", what, argv[0], verb,
                           r.exit_code > 0 ? fmt::format(" (exit {})", r.exit_code) : "",
                           message.empty() ? "" : ":\n" + message));
}

// Runs `argv`; nullopt when it failed with NOT_FOUND.
std::optional<std::string> RunUnlessNotFound(const std::vector<std::string>& argv,
                                             const std::string& what) {
  ProgramResult r = RunProgram(argv);
  if (r.exit_code == 0 && !r.interrupted) return r.out;
  if (!r.interrupted && r.err.find(kNotFound) != std::string::npos) return std::nullopt;
  throw FailureOf(argv, r, what);
}

}  // namespace

std::string GcloudProgram() {
  const char* gcloud = std::getenv("PODRUN_GCLOUD");
  return gcloud && *gcloud ? gcloud : "gcloud";
}

std::string DescribeTpuQuery(const TpuQuery& q) {
  return fmt::format("tpu {} (zone {}{})", q.name, q.zone,
                     q.project ? ", project " + *q.project : std::string());
}

std::vector<std::string> GcloudCreateNodeCommand(const TpuQuery& node, const TpuCreate& create) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",
                                   "tpu-vm",        "create",  node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(),
              {"--accelerator-type", create.accelerator_type, "--version", create.version});
  if (create.spot) argv.push_back("--spot");
  if (create.preemptible) argv.push_back("--preemptible");
  argv.insert(argv.end(), {"--async", "--quiet"});
  return argv;
}

std::vector<std::string> GcloudCreateQueuedCommand(const TpuQuery& node, const TpuCreate& create) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",      "queued-resources",
                                   "create",        node.name, "--node-id", node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(),
              {"--accelerator-type", create.accelerator_type, "--runtime-version", create.version});
  if (create.spot) argv.push_back("--spot");
  if (create.valid_until) argv.insert(argv.end(), {"--valid-until-duration", *create.valid_until});
  argv.insert(argv.end(), {"--async", "--quiet"});
  return argv;
}

std::vector<std::string> GcloudDeleteNodeCommand(const TpuQuery& node) {
  std::vector<std::string> argv = {GcloudProgram(), "compute", "tpus",
                                   "tpu-vm",        "delete",  node.name};
  AddLocation(argv, node);
  argv.push_back("--quiet");
  return argv;
}

std::vector<std::string> GcloudDeleteQueuedCommand(const TpuQuery& node) {
  std::vector<std::string> argv = {GcloudProgram(),    "compute", "tpus",
                                   "queued-resources", "delete",  node.name};
  AddLocation(argv, node);
  argv.insert(argv.end(), {"--force", "--quiet"});
  return argv;
}

std::vector<std::string> GcloudDescribeQueuedCommand(const TpuQuery& node) {
  std::vector<std::string> argv = {GcloudProgram(),    "compute",  "tpus",
                                   "queued-resources", "describe", node.name};
  AddLocation(argv, node);
  argv.push_back("--format=json");
  return argv;
}

std::vector<std::string> GcloudGuestAttributesCommand(const TpuQuery& node) {
  std::vector<std::string> argv = {GcloudProgram(),        "compute", "tpus", "tpu-vm",
                                   "get-guest-attributes", node.name};
  AddLocation(argv, node);
  argv.push_back("--format=json");
  return argv;
}

bool IsCapacityRefusal(const std::string& words) {
  if (words.find("no more capacity") != std::string::npos) return true;
  return words.find("RESOURCE_EXHAUSTED") != std::string::npos &&
         words.find("Quota") == std::string::npos && words.find("quota") == std::string::npos;
}

std::string RunGcloud(const std::vector<std::string>& argv, const std::string& what) {
  ProgramResult r = RunProgram(argv);
  if (r.exit_code == 0 && !r.interrupted) return r.out;
  throw FailureOf(argv, r, what);
}

std::optional<TpuNode> FindTpuNode(const TpuQuery& node) {
  const std::string what = DescribeTpuQuery(node);
  auto out = RunUnlessNotFound(GcloudDescribeCommand(node), what);
  if (!out) return std::nullopt;
  return ParseTpuNode(*out, what);
}

std::optional<QueuedResource> FindQueuedResource(const TpuQuery& node) {
  const std::string what = "queued resource " + node.name;
  auto out = RunUnlessNotFound(GcloudDescribeQueuedCommand(node), what);
  if (!out) return std::nullopt;
  return ParseQueuedResource(*out, what);
}

}  // namespace podrun
