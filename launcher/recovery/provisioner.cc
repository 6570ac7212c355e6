// The one provisioning engine over PodSource (see provisioner.h).
#include "launcher/recovery/provisioner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

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

// Ready answers in a row whose workers cannot be read, asked again before the error stands.
constexpr int kUnreadableAnswers = 3;

// The API stopped making the VMs in a zone for lack of capacity (a MIG's instances stuck with a
// stockout), while other zones may have it.
struct StockoutWhileMade {
  std::string said;
};

class SliceProvisioner final : public Provisioner {
 public:
  SliceProvisioner(const PodSourceRef& home, TpuCreate create, const SourceMaker& make_source,
                   std::chrono::seconds poll, ProvisionWait wait, ProvisionerOptions options)
      : home_(home),
        zones_(SliceZones(create, home.query.zone)),
        create_(std::move(create)),
        poll_(poll),
        wait_(std::move(wait)),
        options_(std::move(options)),
        outage_(
            ApiNameOf(home.kind), CapacityWaitOf(create_), wait_,
            [this](const std::string& what) { TellWait(what); }, options_.clock) {
    for (const std::string& zone : zones_) sources_.push_back(make_source(RefIn(zone)));
  }

  std::string What() const override { return sources_[at_]->What(); }

  SliceReady Ensure(bool recreate_preempted) override {
    const auto began = options_.clock();
    const SourceNow now = Locate();
    if (!now.deleted()) {
      const std::string differs = outage_.Run([&] { return source().DiffersFrom(create_); });
      if (!differs.empty()) throw Error(ExitCode::kUsage, differs);
    }
    SliceReady ready;
    switch (now.condition) {
      case SourceCondition::kReady:
        ready.where = RefIn(zones_[at_]);
        ready.state = outage_.Run([&] { return source().Describe(/*refresh=*/true, nullptr); });
        return ready;
      case SourceCondition::kPreempted:
        if (!recreate_preempted) throw Error(ExitCode::kUnreachable, now.why);
        Say(fmt::format("{}: deleting it and creating it again", now.why));
        return Recreate();
      case SourceCondition::kBusy:
        if (!now.deleting) {  // made or repaired by someone (or an earlier podrun): waited for
          ready.state = *WaitUntilReady(/*created_here=*/false);
          break;
        }
        WaitUntilDeleted();  // an earlier podrun's delete (a keeper killed in it): then made
        [[fallthrough]];
      case SourceCondition::kGone:
        ready.state = CreateAndWait();
        ready.action = SliceAction::kCreated;
        break;
    }
    ready.where = RefIn(zones_[at_]);
    ready.waited_seconds = Seconds(options_.clock() - began).count();
    return ready;
  }

  SliceReady Recreate() override {
    const auto began = options_.clock();
    // Only the VMs go, where they live (looked for only when it has fallback zones): the slice's
    // other parts (a MIG's template and policy) serve the new ones.
    at_ = 0;
    if (zones_.size() > 1) Locate();
    SayAndTell(fmt::format("deleting the VMs of {} (gcloud)", What()));
    if (!outage_.Run([&] { return source().Delete(PodSource::DeleteScope::kVms); })) {
      Say(fmt::format("{} had no VMs left to delete", What()));  // an earlier keeper's delete
    }
    SliceReady ready;
    ready.state = CreateAndWait();
    ready.action = SliceAction::kRecreated;
    ready.where = RefIn(zones_[at_]);
    ready.waited_seconds = Seconds(options_.clock() - began).count();
    return ready;
  }

  bool Delete() override {
    bool deleted = false;
    size_t where = 0;  // What() names the zone it lived in afterwards
    // Fallback zones first: a MIG's template and policy are shared with its own zone, where
    // they may outlive its group (always asked there), and go once no group uses them.
    for (at_ = sources_.size() - 1; at_ > 0; --at_) {
      if (outage_.Run([&] { return source().Now(); }).deleted()) continue;
      if (!outage_.Run([&] { return source().Delete(); })) continue;
      where = deleted ? where : at_;
      deleted = true;
    }
    deleted = outage_.Run([&] { return sources_[0]->Delete(); }) || deleted;
    at_ = where;
    return deleted;
  }

 private:
  PodSourceRef RefIn(const std::string& zone) const {
    PodSourceRef ref = home_;
    ref.query.zone = zone;
    return ref;
  }
  PodSource& source() { return *sources_[at_]; }
  const std::string& zone() const { return zones_[at_]; }
  std::string Name() const {
    return fmt::format("{} {}", PodSourceKindName(home_.kind), home_.query.name);
  }

  // What the slice is now in the first of its zones where it exists (at_ set to it), else gone.
  SourceNow Locate() {
    SourceNow own;
    for (at_ = 0; at_ < sources_.size(); ++at_) {
      SourceNow now = outage_.Run([&] { return source().Now(); });
      if (!now.deleted()) return now;
      if (at_ == 0) own = now;
    }
    at_ = 0;
    return own;
  }

  // Create (moving zones after a stockout), then WaitUntilReady; what was made is deleted when
  // either fails or is given up. A VM preempted while its slice is made is one more preemption
  // (options_.on_preempted), not the end: the slice is made again, until capacity_wait has passed
  // since the first create. A slice stuck in CREATING past the deadline is made again
  // (kStuckCreateRetries times).
  SourceState CreateAndWait() {
    const auto began = options_.clock();
    size_t first = 0;
    for (int stuck = 0;;) {
      Create(first);
      first = 0;
      std::optional<SourceState> state;
      try {
        state = WaitUntilReady(/*created_here=*/true);
      } catch (const PreemptedWhileMade& p) {
        if (Seconds(options_.clock() - began) >= CapacityWaitOf(create_)) Undo(p);
        Say(fmt::format("{}: deleting it and making it again", p.what()));
        if (options_.on_preempted) options_.on_preempted(p.state);
        outage_.Run([&] { return source().Delete(PodSource::DeleteScope::kVms); });
        continue;
      } catch (const StockoutWhileMade& s) {
        const std::chrono::seconds waited = Seconds(options_.clock() - began);
        if (waited >= CapacityWaitOf(create_)) {
          Undo(GaveUp(zones_, waited, CapacityWaitOf(create_), s.said));
        }
        first = (at_ + 1) % zones_.size();
        Say(fmt::format("{}: no capacity in {} ({}): deleting what was made, trying {}", What(),
                        zone(), s.said, zones_[first]));
        outage_.Run([&] { return source().Delete(PodSource::DeleteScope::kVms); });
        // Every zone tried: a pause before the round begins again with the own zone.
        if (first == 0 &&
            !wait_(std::min(options_.first_capacity_backoff, CapacityWaitOf(create_) - waited))) {
          throw Error(ExitCode::kInterrupted,
                      fmt::format("interrupted while waiting for capacity for {}", What()));
        }
        continue;
      } catch (const Error& e) {
        Undo(e);
      }
      if (state) return *state;
      const std::string stuck_text =
          fmt::format("{}: still CREATING after {} (the creating deadline)", What(),
                      FormatSpan(options_.creating_deadline));
      if (stuck == kStuckCreateRetries) {
        outage_.Run([&] { return source().Delete(); });
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: created {} times, it never left CREATING: deleted it; try "
                                "again later or in another zone (create: fallback_zones)",
                                stuck_text, kStuckCreateRetries + 1));
      }
      ++stuck;
      SayAndTell(fmt::format("{}: deleting it and creating it again (try {} of {})", stuck_text,
                             stuck + 1, kStuckCreateRetries + 1));
      outage_.Run([&] { return source().Delete(PodSource::DeleteScope::kVms); });
    }
  }

  // An earlier delete (an earlier keeper's, killed in it) is waited for until the source is gone.
  void WaitUntilDeleted() {
    Say(fmt::format("{} is DELETING (an earlier delete): waiting until it is gone", What()));
    for (;;) {
      const auto asked = options_.clock();
      const SourceNow now = outage_.Run([&] { return source().Now(); });
      if (now.deleted()) return;
      TellWait(fmt::format("{}: {} (an earlier delete)", Name(), now.state));
      if (!wait_(UntilNextPoll(poll_, options_.clock() - asked))) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("{}: interrupted while waiting for its delete", What()));
      }
    }
  }

  // Asks for the slice in zones_[first], moving on to the next zone at once when one refuses
  // for capacity; when every zone has refused, waits (backing off) and begins again with the
  // slice's own zone, until capacity_wait. at_ is the zone the create was taken in.
  void Create(size_t first) {
    const std::chrono::seconds limit = CapacityWaitOf(create_);
    const auto began = options_.clock();
    std::chrono::seconds backoff = options_.first_capacity_backoff;
    std::optional<LiveProgress> live;
    at_ = first;
    std::vector<std::string> refused;  // the zones that refused since the last backoff
    std::string said_for;              // the zone the "creating" line was said for
    for (;;) {
      // Given up before it is sent (a stop between two gcloud calls): nothing is created.
      if (!wait_(std::chrono::seconds(0))) {
        throw Error(ExitCode::kInterrupted,
                    fmt::format("interrupted before creating {} (nothing was created)", What()));
      }
      if (said_for != zone()) {
        Say(fmt::format("creating {}: {} (gcloud)", What(), DescribeTpuCreate(create_)));
        said_for = zone();
      }
      try {
        source().ForgetCache();  // the new VMs' addresses differ
        source().Create(create_);
        outage_.Over();
        return;
      } catch (const GcloudError& e) {
        // Stopped in flight, the create may have reached the API: whatever it made goes.
        if (e.failure() == GcloudFailure::kInterrupted) Undo(e);
        // A create that failed in the API's bad minute may have reached it: what exists under the
        // slice's name now is this create's (none was there before it), and is waited for.
        if (e.failure() == GcloudFailure::kExists && outage_.ongoing()) return;
        if (IsTransientGcloudFailure(e.failure())) {
          outage_.WaitAfter(e);  // then asked again, in the same zone
          continue;
        }
        if (e.failure() != GcloudFailure::kStockout) throw;
        refused.push_back(zone());
        if (refused.size() < zones_.size()) {
          at_ = (at_ + 1) % zones_.size();
          SayAndTell(fmt::format("{}: no capacity in {}: trying {} at once", Name(), refused.back(),
                                 zone()));
          continue;
        }
        const std::chrono::seconds waited = Seconds(options_.clock() - began);
        if (waited >= limit) throw GaveUp(refused, waited, limit, e.what());
        const std::chrono::seconds pause = std::min(backoff, limit - waited);
        const std::string again = zones_.size() > 1 ? " with " + zones_.front() : "";
        const std::string message = fmt::format(
            "{}: no capacity in {} (RESOURCE_EXHAUSTED): trying again in {}{} (waited {} of {})",
            Name(), fmt::join(refused, ", "), FormatSpan(pause), again, FormatSpan(waited),
            FormatSpan(limit));
        SayAndTell(message);
        if (!live) {
          live.emplace(STDERR_FILENO);
          live->BeginPhase(Name(), {0});
        }
        live->SetDetail(fmt::format("no capacity in {}: again in {} (waited {} of {})",
                                    fmt::join(refused, ", "), FormatSpan(pause), FormatSpan(waited),
                                    FormatSpan(limit)));
        if (!wait_(pause)) {
          throw Error(ExitCode::kInterrupted,
                      fmt::format("interrupted while waiting for capacity for {}", What()));
        }
        backoff = std::min(backoff * 2, kMaxCapacityBackoff);
        refused.clear();
        at_ = 0;
      }
    }
  }

  // Ready: the slice's workers; nullopt when a slice made here stayed CREATING past the creating
  // deadline. Throws when it vanished, was preempted or failed meanwhile, when a stockout
  // outlasted capacity_wait (StockoutWhileMade when another zone may serve), or when the wait was
  // given up.
  std::optional<SourceState> WaitUntilReady(bool created_here) {
    const std::chrono::seconds limit = CapacityWaitOf(create_);
    bool short_of_capacity = false;
    Clock::time_point short_since{};  // capacity short since, while short_of_capacity
    // Since when the slice has been CREATING (the API making it), while `creating`. (A
    // time_point and a flag: GCC 12 takes an optional time_point for uninitialized at -O2.)
    bool creating = false;
    Clock::time_point creating_since{};
    LiveProgress live(STDERR_FILENO);
    live.BeginPhase(Name(), {0});
    const auto began = options_.clock();
    std::string said;    // the condition last said on stderr (a stockout's wait is not repeated)
    int unreadable = 0;  // ready answers whose workers could not be read, in a row
    for (;;) {
      const auto asked = options_.clock();
      // A poll that fails is asked again (the API's bad minutes): it never undoes what is made.
      const SourceNow now = outage_.Run([&] { return source().Now(); });
      if (now.ready()) {
        SourceState state;
        try {
          state = outage_.Run([&] { return source().Describe(/*refresh=*/true, nullptr); });
          unreadable = 0;
        } catch (const Error& e) {
          // The VMs changed between the two answers (one repaired, its address not shown yet):
          // asked again at the next poll, a few times, never undoing what is made for it.
          if (e.code() == ExitCode::kInterrupted || ++unreadable > kUnreadableAnswers) throw;
          state.not_ready = e.what();
        }
        if (state.not_ready.empty()) {
          live.End();
          Say(fmt::format("{} {} ({} workers, after {})", What(), state.state, state.workers.size(),
                          FormatSpan(Seconds(options_.clock() - began))));
          return state;
        }
      } else if (now.deleted()) {
        throw Error(ExitCode::kUnreachable, fmt::format("{}: it vanished while podrun waited "
                                                        "for it (someone deleted it)",
                                                        What()));
      } else if (now.failed && created_here) {
        throw Error(ExitCode::kUnreachable,
                    fmt::format("{}: {} (it expired or could not be satisfied): nothing was "
                                "started",
                                What(), now.why));
      } else if (now.preempted() && created_here) {
        throw PreemptedWhileMade(
            fmt::format("{}: preempted while it was being made: {}", What(), now.why), now.state);
      } else if (now.preempted()) {
        // Not made here: only a recreation brings it back, which is the caller's to decide.
        throw Error(ExitCode::kUnreachable, fmt::format("{}: {}", What(), now.why));
      }
      std::string state = now.state;
      if (!now.stockout.empty()) {
        if (created_here && zones_.size() > 1) throw StockoutWhileMade{now.stockout};
        if (!short_of_capacity) short_since = options_.clock();
        short_of_capacity = true;
        const std::chrono::seconds waited = Seconds(options_.clock() - short_since);
        if (waited >= limit) throw GaveUp({zone()}, waited, limit, now.stockout);
        state = fmt::format("no capacity in {} (waited {} of {})", zone(), FormatSpan(waited),
                            FormatSpan(limit));
      } else {
        short_of_capacity = false;
      }
      if (!now.creating) {
        creating = false;
      } else if (!creating) {
        creating = true;
        creating_since = options_.clock();
      } else if (created_here && options_.clock() - creating_since >= options_.creating_deadline) {
        return std::nullopt;
      }
      live.SetDetail(fmt::format("{} {}", state, FormatSpan(Seconds(options_.clock() - began))));
      const std::string sayable = now.stockout.empty() ? now.state : "no capacity";
      if (sayable != said) {
        Say(fmt::format("{}: {}{} (asking gcloud every {} s)", What(), state,
                        now.why.empty() || now.creating ? "" : " (" + now.why + ")",
                        poll_.count()));
        said = sayable;
      }
      TellWait(fmt::format("{}: {}", Name(), state));
      if (!wait_(UntilNextPoll(poll_, options_.clock() - asked))) {
        throw Error(
            ExitCode::kInterrupted,
            fmt::format("{}: interrupted while waiting for it (it is still {})", What(), state));
      }
    }
  }

  // Deletes what this provisioner made (a TPU node's queued resource is kept with keep_queued),
  // then rethrows `e` saying so.
  [[noreturn]] void Undo(const Error& e) {
    std::string after;
    if (options_.keep_queued && create_.queued) {
      after = fmt::format("{} kept (--keep-queued): podrun down deletes it", What());
    } else {
      try {
        Say(fmt::format("{}: deleting what podrun made, so that nothing is left", What()));
        after = fmt::format("{} deleted", What());
        if (!source().Delete()) after = "nothing was made";
      } catch (const Error& d) {
        after = fmt::format(
            "{} could not be deleted ({}): delete it with podrun down --{} {} --zone {}", What(),
            d.what(), PodSourceKindName(home_.kind), home_.query.name, zone());
      }
    }
    const std::string message = fmt::format("{} ({})", e.what(), after);
    if (const auto* g = dynamic_cast<const GcloudError*>(&e)) {
      throw GcloudError(g->code(), message, g->failure(), g->reason());
    }
    throw Error(e.code(), message);
  }

  Error GaveUp(const std::vector<std::string>& zones, std::chrono::seconds waited,
               std::chrono::seconds limit, const std::string& said) const {
    return Error(
        ExitCode::kUnreachable,
        fmt::format("{}: no capacity in {}: gave up after waiting {} (capacity_wait: {}; "
                    "set create: capacity_wait to wait longer{}). The API said: {}",
                    Name(), fmt::join(zones, ", "), FormatSpan(waited), FormatSpan(limit),
                    zones_.size() > 1 ? "" : ", or fallback_zones to try other zones", said));
  }

  void TellWait(const std::string& what) const {
    if (options_.on_wait) options_.on_wait(what);
  }
  // On stderr and to on_wait.
  void SayAndTell(const std::string& what) const { Say(what), TellWait(what); }

  const PodSourceRef home_;
  const std::vector<std::string> zones_;             // SliceZones: the slice's own zone first
  std::vector<std::unique_ptr<PodSource>> sources_;  // one per zone
  size_t at_ = 0;  // the zone the slice lives in (or is being made in) now
  const TpuCreate create_;
  const std::chrono::seconds poll_;
  const ProvisionWait wait_;
  const ProvisionerOptions options_;
  ApiOutage outage_;  // gcloud's transient failures, waited out up to capacity_wait
};

}  // namespace

std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& home, const TpuCreate& create,
                                             SourceMaker make_source, std::chrono::seconds poll,
                                             ProvisionWait wait, ProvisionerOptions options) {
  return std::make_unique<SliceProvisioner>(home, create, make_source, poll, std::move(wait),
                                            std::move(options));
}

std::unique_ptr<Provisioner> MakeProvisioner(const PodSourceRef& home, const TpuCreate& create,
                                             const std::filesystem::path& cache_dir,
                                             std::chrono::seconds poll, ProvisionWait wait,
                                             ProvisionerOptions options) {
  return MakeProvisioner(
      home, create, [cache_dir](const PodSourceRef& ref) { return MakePodSource(ref, cache_dir); },
      poll, std::move(wait), std::move(options));
}

}  // namespace podrun
