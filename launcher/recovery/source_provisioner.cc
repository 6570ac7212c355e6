// Provisioning a slice through its PodSource alone (see source_provisioner.h).
#include "launcher/recovery/source_provisioner.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "launcher/base/error.h"
#include "launcher/output/live_progress.h"
#include "launcher/output/say.h"
#include "launcher/output/time_format.h"
#include "launcher/recovery/api_outage.h"

namespace podrun {
namespace {

using Clock = std::chrono::steady_clock;

std::chrono::seconds Seconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

class SourceProvisioner final : public Provisioner {
 public:
  SourceProvisioner(PodSourceRef ref, std::unique_ptr<PodSource> source, TpuCreate create,
                    std::chrono::seconds poll, TpuWait wait, TpuProvisionerOptions options)
      : ref_(std::move(ref)),
        source_(std::move(source)),
        create_(std::move(create)),
        poll_(poll),
        wait_(std::move(wait)),
        options_(std::move(options)),
        outage_(
            ApiNameOf(ref_.kind), CapacityWaitOf(create_), wait_,
            [this](const std::string& what) { TellWait(what); }, options_.clock) {}

  std::string What() const override { return source_->What(); }

  SliceReady Ensure(bool recreate_preempted) override {
    const auto began = options_.clock();
    const SourceNow now = outage_.Run([&] { return source_->Now(); });
    SliceReady ready;
    switch (now.condition) {
      case SourceCondition::kReady:
        ready.state = outage_.Run([&] { return source_->Describe(/*refresh=*/true, nullptr); });
        return ready;
      case SourceCondition::kPreempted:
        if (!recreate_preempted) throw Error(ExitCode::kUnreachable, now.why);
        Say(fmt::format("{}: deleting it and creating it again", now.why));
        return Recreate();
      case SourceCondition::kGone:
        ready.state = CreateAndWait();
        ready.action = TpuNodeAction::kCreated;
        break;
      case SourceCondition::kBusy:
        if (now.deleting) {  // an earlier podrun's delete (a keeper killed in it): then made
          WaitUntilDeleted();
          ready.state = CreateAndWait();
          ready.action = TpuNodeAction::kCreated;
          break;
        }
        // Being made or repaired by someone (or an earlier podrun): waited for, never deleted.
        ready.state = WaitUntilReady(/*created_here=*/false);
        break;
    }
    ready.waited_seconds = Seconds(options_.clock() - began).count();
    return ready;
  }

  SliceReady Recreate() override {
    const auto began = options_.clock();
    // Only the VMs go: the slice's other parts (a MIG's template and policy) serve the new ones.
    Say(fmt::format("deleting the VMs of {} (gcloud)", What()));
    TellWait("deleting the VMs of " + What());
    if (!outage_.Run([&] { return source_->Delete(PodSource::DeleteScope::kVms); })) {
      // an earlier keeper's delete did it
      Say(fmt::format("{} had no VMs left to delete", What()));
    }
    SliceReady ready;
    ready.state = CreateAndWait();
    ready.action = TpuNodeAction::kRecreated;
    ready.waited_seconds = Seconds(options_.clock() - began).count();
    return ready;
  }

  bool Delete() override {
    Say(fmt::format("deleting {} (gcloud)", What()));
    TellWait("deleting " + What());
    return source_->Delete();
  }

 private:
  // Create (tried again after a stockout gcloud reports), then WaitUntilReady; what was made is
  // deleted when either fails or is given up. A VM preempted while its slice is made is one more
  // preemption (options_.on_preempted), not the end: the slice is made again, until
  // capacity_wait has passed since the first create.
  SourceState CreateAndWait() {
    const auto began = options_.clock();
    for (;;) {
      source_->ForgetCache();  // the new VMs' addresses differ
      Create();
      try {
        return WaitUntilReady(/*created_here=*/true);
      } catch (const PreemptedWhileMade& p) {
        if (Seconds(options_.clock() - began) >= CapacityWaitOf(create_)) Undo(p);
        Say(fmt::format("{}: deleting it and making it again", p.what()));
        if (options_.on_preempted) options_.on_preempted(p.state);
        outage_.Run([&] { return source_->Delete(PodSource::DeleteScope::kVms); });
      } catch (const Error& e) {
        Undo(e);
      }
    }
  }

  // An earlier delete (an earlier keeper's, killed in it) is waited for until the source is gone.
  void WaitUntilDeleted() {
    for (;;) {
      const SourceNow now = outage_.Run([&] { return source_->Now(); });
      if (now.deleted()) return;
      TellWait(fmt::format("{}: {} (an earlier delete)", What(), now.state));
      if (!wait_(poll_)) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("{}: interrupted while waiting for its delete", What()));
      }
    }
  }

  void Create() {
    Say(fmt::format("creating {}: {} (gcloud)", What(), DescribeTpuCreate(create_)));
    const std::chrono::seconds limit = CapacityWaitOf(create_);
    const auto began = options_.clock();
    std::chrono::seconds backoff = options_.first_capacity_backoff;
    for (;;) {
      if (!wait_(std::chrono::seconds(0))) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("interrupted before creating {} (nothing was created)", What()));
      }
      try {
        source_->Create(create_);
        outage_.Over();
        return;
      } catch (const GcloudError& e) {
        // Stopped in flight, the create may have reached the API: whatever it made goes.
        if (e.failure() == GcloudFailure::kInterrupted) Undo(e);
        if (IsTransientGcloudFailure(e.failure())) {
          // The API's bad minute: what the create made was deleted (PodSource::Create), and it
          // is asked again once the API answers.
          outage_.WaitAfter(e);
          continue;
        }
        if (e.failure() != GcloudFailure::kStockout) throw;
        const std::chrono::seconds waited = Seconds(options_.clock() - began);
        if (waited >= limit) throw GaveUp(waited, limit, e.what());
        const std::chrono::seconds pause = std::min(backoff, limit - waited);
        const std::string message =
            fmt::format("{}: no capacity in {}: trying again in {} (waited {} of {})", What(),
                        source_zone(), FormatSpan(pause), FormatSpan(waited), FormatSpan(limit));
        Say(message);
        TellWait(message);
        if (!wait_(pause)) {
          throw Error(ExitCode::kInterrupted,
                      fmt::format("interrupted while waiting for capacity for {} (nothing was "
                                  "created)",
                                  What()));
        }
        backoff = std::min(backoff * 2, kMaxCapacityBackoff);
      }
    }
  }

  // Ready: the slice's workers. Throws when it vanished or was preempted meanwhile, when a
  // stockout outlasted capacity_wait, or when the wait was given up.
  SourceState WaitUntilReady(bool created_here) {
    const std::chrono::seconds limit = CapacityWaitOf(create_);
    bool short_of_capacity = false;
    Clock::time_point short_since{};  // capacity short since, while short_of_capacity
    LiveProgress live(STDERR_FILENO);
    live.BeginPhase(What().substr(0, What().find(" (")), {0});
    const auto began = options_.clock();
    std::string said;  // the condition last said on stderr (a stockout's wait is not repeated)
    for (;;) {
      // A poll that fails is asked again (the API's bad minutes): it never undoes what is made.
      const SourceNow now = outage_.Run([&] { return source_->Now(); });
      if (now.ready()) {
        SourceState state =
            outage_.Run([&] { return source_->Describe(/*refresh=*/true, nullptr); });
        if (state.not_ready.empty()) return state;
      } else if (now.deleted()) {
        throw Error(ExitCode::kUnreachable, fmt::format("{}: it vanished while podrun waited "
                                                        "for it (someone deleted it)",
                                                        What()));
      } else if (now.preempted() && created_here) {
        throw PreemptedWhileMade(
            fmt::format("{}: preempted while it was being made: {}", What(), now.why), now.state);
      } else if (now.preempted()) {
        // Not made here: only a recreation brings it back, which is the caller's to decide.
        throw Error(ExitCode::kUnreachable, fmt::format("{}: {}", What(), now.why));
      }
      std::string state = now.state;
      if (!now.stockout.empty()) {
        if (!short_of_capacity) short_since = options_.clock();
        short_of_capacity = true;
        const std::chrono::seconds waited = Seconds(options_.clock() - short_since);
        if (waited >= limit) throw GaveUp(waited, limit, now.stockout);
        state = fmt::format("no capacity in {} (waited {} of {})", source_zone(),
                            FormatSpan(waited), FormatSpan(limit));
      } else {
        short_of_capacity = false;
      }
      live.SetDetail(fmt::format("{} {}", state, FormatSpan(Seconds(options_.clock() - began))));
      const std::string sayable = now.stockout.empty() ? now.state : "no capacity";
      if (sayable != said) {
        Say(fmt::format("{}: {}{}", What(), state, now.why.empty() ? "" : " (" + now.why + ")"));
        said = sayable;
      }
      TellWait(fmt::format("{}: {}", What(), state));
      if (!wait_(poll_)) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("{}: interrupted while waiting for it", What()));
      }
    }
  }

  [[noreturn]] void Undo(const Error& e) {
    std::string after;
    try {
      Say(fmt::format("{}: deleting what podrun made, so that nothing is left", What()));
      source_->Delete();
      after = fmt::format("{} deleted", What());
    } catch (const Error& d) {
      after =
          fmt::format("{} could not be deleted ({}): delete it with podrun down --{} {} --zone {}",
                      What(), d.what(), PodSourceKindName(kind()), name(), source_zone());
    }
    const std::string message = fmt::format("{} ({})", e.what(), after);
    if (const auto* g = dynamic_cast<const GcloudError*>(&e)) {
      throw GcloudError(g->code(), message, g->failure(), g->reason());
    }
    throw Error(e.code(), message);
  }

  Error GaveUp(std::chrono::seconds waited, std::chrono::seconds limit,
               const std::string& said) const {
    return Error(ExitCode::kUnreachable,
                 fmt::format("{}: no capacity in {}: gave up after waiting {} (capacity_wait: {}; "
                             "set create: capacity_wait to wait longer). The API said: {}",
                             What(), source_zone(), FormatSpan(waited), FormatSpan(limit), said));
  }

  void TellWait(const std::string& what) const {
    if (options_.on_wait) options_.on_wait(what);
  }

  PodSourceKind kind() const { return ref_.kind; }
  const std::string& name() const { return ref_.query.name; }
  const std::string& source_zone() const { return ref_.query.zone; }

  const PodSourceRef ref_;
  std::unique_ptr<PodSource> source_;
  const TpuCreate create_;
  const std::chrono::seconds poll_;
  const TpuWait wait_;
  const TpuProvisionerOptions options_;
  ApiOutage outage_;
};

}  // namespace

std::unique_ptr<Provisioner> MakeSourceProvisioner(const PodSourceRef& ref,
                                                   std::unique_ptr<PodSource> source,
                                                   TpuCreate create, std::chrono::seconds poll,
                                                   TpuWait wait, TpuProvisionerOptions options) {
  return std::make_unique<SourceProvisioner>(ref, std::move(source), std::move(create), poll,
                                             std::move(wait), std::move(options));
}

}  // namespace podrun
