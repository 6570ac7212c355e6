// Creating, recreating, deleting and waiting for a TPU node (see tpu_provisioner.h).
#include "launcher/recovery/tpu_provisioner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "launcher/base/error.h"
#include "launcher/output/live_progress.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/store/podrun_home.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;

// A positive number of seconds from the environment variable `name`, else `fallback`.
std::chrono::seconds SecondsFromEnv(const char* name, std::chrono::seconds fallback) {
  if (const char* env = std::getenv(name)) {
    const int seconds = std::atoi(env);
    if (seconds > 0) return std::chrono::seconds(seconds);
  }
  return fallback;
}

std::chrono::seconds Seconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

}  // namespace

std::chrono::seconds TpuPollInterval(std::chrono::seconds fallback) {
  return SecondsFromEnv("PODRUN_TPU_POLL_SECONDS", fallback);
}

std::chrono::seconds TpuCapacityBackoff() {
  return SecondsFromEnv("PODRUN_TPU_CAPACITY_BACKOFF_SECONDS", std::chrono::seconds(30));
}

std::chrono::seconds TpuCreatingDeadline() {
  return SecondsFromEnv("PODRUN_TPU_CREATING_DEADLINE_SECONDS", std::chrono::minutes(30));
}

double TpuProvisioner::SecondsSince(Clock::time_point t) const {
  return std::chrono::duration<double>(options_.clock() - t).count();
}

void TpuProvisioner::TellWait(const std::string& what) const {
  if (options_.on_wait) options_.on_wait(what);
}

TpuNodeReady TpuProvisioner::Ensure(bool recreate_preempted) {
  const auto began = options_.clock();
  std::optional<TpuNode> node = FindNode();
  std::optional<QueuedResource> qr;
  if (create_.queued || (node && !node->queued_resource.empty())) qr = FindQueued();
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
    const std::string state = node && IsNodeGone(node->state) ? node->state : qr->state;
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
  if (node && node->state == "DELETING") {
    WaitUntilDeleted();  // an earlier podrun's delete (a keeper killed in it): then made
    node.reset();
    qr.reset();
  }
  if (!node && !qr) {
    ready.node = CreateAndWait();
    ready.action = TpuNodeAction::kCreated;
  } else {
    // Being created by someone (or an earlier podrun): waited for, never deleted.
    ready.node = *WaitUntilReady(/*created_here=*/false);
  }
  ready.waited_seconds = SecondsSince(began);
  return ready;
}

std::optional<TpuNode> TpuProvisioner::FindNode() {
  return outage_.Run([&] { return FindTpuNode(node_); });
}

std::optional<QueuedResource> TpuProvisioner::FindQueued() {
  return outage_.Run([&] { return FindQueuedResource(node_); });
}

void TpuProvisioner::WaitUntilDeleted() {
  const std::string what = DescribeTpuQuery(node_);
  Say(fmt::format("{} is DELETING (an earlier delete): waiting until it is gone", what));
  while (FindNode() || (create_.queued && FindQueued())) {
    TellWait(fmt::format("tpu {}: DELETING (an earlier delete)", node_.name));
    if (!wait_(poll_)) {
      throw Error(ExitCode::kInterrupted,
                  fmt::format("interrupted while waiting for {} to be deleted", what));
    }
  }
}

TpuNodeReady TpuProvisioner::Recreate() {
  const auto began = options_.clock();
  Delete();
  TpuNodeReady ready;
  ready.node = CreateAndWait();
  ready.action = TpuNodeAction::kRecreated;
  ready.waited_seconds = SecondsSince(began);
  return ready;
}

bool TpuProvisioner::Delete() {
  const std::string what = DescribeTpuQuery(node_);
  bool deleted = false;
  if (FindQueued()) {
    Say(fmt::format("deleting queued resource {} and its node (gcloud)", node_.name));
    // Asked again after a transient failure: a delete that went through reads NOT_FOUND then.
    outage_.Run([&] { RunGcloudUnlessNotFound(GcloudDeleteQueuedCommand(node_), what); });
    deleted = true;
  }
  if (FindNode()) {
    Say(fmt::format("deleting {} (gcloud)", what));
    outage_.Run([&] { RunGcloudUnlessNotFound(GcloudDeleteNodeCommand(node_), what); });
    deleted = true;
  }
  ForgetCachedTpuNode(node_, PodrunHome() / "cache");
  return deleted;
}

TpuNode TpuProvisioner::CreateAndWait() {
  const std::string what = DescribeTpuQuery(node_);
  for (int retry = 0;; ++retry) {
    // The queued resource this create made is deleted when it cannot serve (unless keep_queued):
    // rethrows `e` with that said.
    auto undo = [&](const Error& e) {
      if (!create_.queued || options_.keep_queued) throw;
      if (!DeleteCreatedQueuedResource(e.code() == ExitCode::kInterrupted ? "interrupted"
                                                                          : "failed")) {
        throw;
      }
      throw Error(e.code(), fmt::format("{} (queued resource {} deleted)", e.what(), node_.name));
    };
    try {
      Create();
    } catch (const GcloudError& e) {
      // Stopped in flight (Ctrl-C, a stop, its deadline), the create may have reached the API:
      // what is queued under the node's name now is this create's (none was there before it).
      // A create gcloud refused made nothing.
      if (e.failure() != GcloudFailure::kInterrupted && e.failure() != GcloudFailure::kTimedOut) {
        throw;
      }
      undo(e);
    }
    std::optional<TpuNode> node;
    try {
      node = WaitUntilReady(/*created_here=*/true);
    } catch (const PreemptedWhileMade& p) {
      // One more preemption, not the end: deleted and made again (not a stuck create's retry).
      Say(fmt::format("{}: deleting it and creating it again", p.what()));
      if (options_.on_preempted) options_.on_preempted(p.state);
      Delete();
      --retry;
      continue;
    } catch (const Error& e) {
      undo(e);
    }
    if (node) return *node;
    const std::string stuck = fmt::format("{}: still CREATING after {} (the creating deadline)",
                                          what, FormatSpan(options_.creating_deadline));
    if (retry == kStuckCreateRetries) {
      Delete();
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: created {} times, it never left CREATING: deleted it; try "
                              "again later or in another zone",
                              stuck, kStuckCreateRetries + 1));
    }
    Say(fmt::format("{}: deleting it and creating it again (try {} of {})", stuck, retry + 2,
                    kStuckCreateRetries + 1));
    TellWait(stuck + ": creating it again");
    Delete();
  }
}

bool TpuProvisioner::DeleteCreatedQueuedResource(const std::string& why) {
  try {
    if (!FindQueuedResource(node_)) return false;  // the create never reached the API
    Say(fmt::format(
        "{}: deleting queued resource {} that podrun created, so that it holds no quota "
        "(podrun up --keep-queued keeps it)",
        why, node_.name));
    RunGcloud(GcloudDeleteQueuedCommand(node_), node_.name);
    ForgetCachedTpuNode(node_, PodrunHome() / "cache");
    return true;
  } catch (const Error& e) {
    Say(
        fmt::format("warning: could not delete queued resource {} (zone {}): {}; delete it "
                    "with podrun down --tpu {} --zone {}",
                    node_.name, node_.zone, e.what(), node_.name, node_.zone));
    return false;
  }
}

void TpuProvisioner::Create() {
  const std::string what = DescribeTpuQuery(node_);
  ForgetCachedTpuNode(node_, PodrunHome() / "cache");  // the new node's addresses differ
  Say(fmt::format("creating {}: {}{} (gcloud)", what, DescribeTpuCreate(create_),
                  create_.queued ? fmt::format(" through queued resource {}", node_.name) : ""));
  const GcloudCommand argv = create_.queued ? GcloudCreateQueuedCommand(node_, create_)
                                            : GcloudCreateNodeCommand(node_, create_);
  const std::chrono::seconds limit = CapacityWaitOf(create_);
  const auto began = options_.clock();
  std::chrono::seconds backoff = options_.first_capacity_backoff;
  std::optional<LiveProgress> live;
  for (;;) {
    // Given up before it is sent (a stop between two gcloud calls): nothing is created.
    if (!wait_(std::chrono::seconds(0))) {
      throw Error(ExitCode::kInterrupted,
                  fmt::format("interrupted before creating {} (nothing was created)", what));
    }
    try {
      RunGcloud(argv, what);
      outage_.Over();
      return;
    } catch (const GcloudError& e) {
      // A create that failed in the API's bad minute may have reached it: what exists under the
      // node's name now is this create's (none was there before it), and is waited for.
      if (e.failure() == GcloudFailure::kExists && outage_.ongoing()) return;
      if (IsTransientGcloudFailure(e.failure())) {
        outage_.WaitAfter(e);
        continue;
      }
      if (e.failure() != GcloudFailure::kStockout) throw;
      const std::chrono::seconds waited = Seconds(options_.clock() - began);
      if (waited >= limit) {
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: no capacity in {} (RESOURCE_EXHAUSTED): gave up after "
                                "waiting {} (capacity_wait: {}; set create: capacity_wait to "
                                "wait longer). gcloud said:\n{}",
                                what, node_.zone, FormatSpan(waited), FormatSpan(limit), e.what()));
      }
      const std::chrono::seconds pause = std::min(backoff, limit - waited);
      const std::string message = fmt::format(
          "tpu {}: no capacity in {} (RESOURCE_EXHAUSTED): trying again in {} "
          "(waited {} of {})",
          node_.name, node_.zone, FormatSpan(pause), FormatSpan(waited), FormatSpan(limit));
      Say(message);
      if (!live) {
        live.emplace(STDERR_FILENO);
        live->BeginPhase("tpu " + node_.name, {0});
      }
      live->SetDetail(fmt::format("no capacity in {}: again in {} (waited {} of {})", node_.zone,
                                  FormatSpan(pause), FormatSpan(waited), FormatSpan(limit)));
      TellWait(message);
      if (!wait_(pause)) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("interrupted while waiting for capacity for {} (nothing was "
                                "created)",
                                what));
      }
      backoff = std::min(backoff * 2, kMaxCapacityBackoff);
    }
  }
}

std::optional<TpuNode> TpuProvisioner::WaitUntilReady(bool created_here) {
  const std::string what = DescribeTpuQuery(node_);
  const auto began = options_.clock();
  // Since when the node has been CREATING (its queued resource PROVISIONING); unset: it is not.
  // (A time_point and a flag: GCC 12 takes an optional time_point for uninitialized at -O2.)
  bool creating = false;
  Clock::time_point creating_since{};
  LiveProgress live(STDERR_FILENO);
  live.BeginPhase("tpu " + node_.name, {0});
  std::string said;  // the state last said on stderr
  for (;;) {
    std::string state;
    if (create_.queued) {
      std::optional<QueuedResource> qr = FindQueued();
      if (!qr) throw Error(ExitCode::kUnreachable, what + ": its queued resource vanished");
      if (NeedsRecreation(std::nullopt, qr)) {
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: queued resource {} is {} (it expired or could not be "
                                "satisfied): nothing was started",
                                what, qr->name, qr->state));
      }
      state = qr->state;
    }
    if (state.empty() || state == "ACTIVE") {
      std::optional<TpuNode> node = FindNode();
      if (!node && !create_.queued) throw Error(ExitCode::kUnreachable, what + ": it vanished");
      if (node && node->state == "READY") {
        live.End();
        Say(fmt::format("{} READY ({} workers, after {})", what, node->endpoints.size(),
                        FormatSpan(Seconds(options_.clock() - began))));
        return *node;
      }
      if (node && IsNodeGone(node->state)) {
        const std::string message =
            fmt::format("{} is {} before it was ever READY", what, node->state);
        if (created_here) throw PreemptedWhileMade(message, node->state);
        throw Error(ExitCode::kUnreachable, message);
      }
      state = node ? node->state : "PROVISIONING";
    }
    if (state != "CREATING" && state != "PROVISIONING") {
      creating = false;
    } else if (!creating) {
      creating = true;
      creating_since = options_.clock();
    } else if (created_here && options_.clock() - creating_since >= options_.creating_deadline) {
      live.End();
      return std::nullopt;
    }
    live.SetDetail(fmt::format("{} {}", state, FormatSpan(Seconds(options_.clock() - began))));
    if (state != said) {
      Say(fmt::format("{}: {} (asking gcloud every {} s)", what, state, poll_.count()));
      TellWait(fmt::format("tpu {}: {}", node_.name, state));
      said = state;
    }
    if (!wait_(poll_)) {
      const bool deleted_after = created_here && create_.queued && !options_.keep_queued;
      throw Error(ExitCode::kInterrupted,
                  fmt::format("interrupted while waiting for {} (it is still {}{})", what, state,
                              deleted_after ? "" : "; podrun down deletes it"));
    }
  }
}

}  // namespace podrun
