// Before a restart: the wait until the pod's slices (TPU nodes, MIG slices) can run a job again,
// and pointing the pod's workers at their slices' current addresses (a recreated slice has new
// ones), in TPU worker order.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/base/error.h"
#include "launcher/connect/pod.h"

namespace podrun {

// Points the workers of slice `slice` of `pod` at `state`'s workers, in TPU worker order (asked
// of the VMs themselves when the API does not show it: worker_numbers.h); returns the indexes of
// those whose address changed. Throws Error(kUnreachable) when the slice came back with another
// number of workers, or its VMs' numbers are not 0..n-1.
std::vector<int> PointSliceAt(Pod& pod, size_t slice, const SourceState& state);

// Moves slice `slice` of `pod` to `where` (recreated in another of its zones), saying so; false
// when it is there already.
bool MoveSliceTo(Pod& pod, size_t slice, const PodSourceRef& where);

// Thrown by WaitForReadySlices for a slice that reads preempted or gone while a recreation can
// bring it back (`recreatable`): the recovery loop recreates it.
class SliceToRecreate : public Error {
 public:
  using Error::Error;
};

// How often WaitForReadySlices asks gcloud: 30 s, or $PODRUN_TPU_POLL_SECONDS (for tests).
std::chrono::seconds ReadyPollInterval();

// Waits until every slice of `pod` (discovered with --tpu or --mig; any other pod returns at
// once) can run a job, asking gcloud afresh every `poll` (`wait(poll)` sleeps and returns false
// when the user gave up: Ctrl-C), saying on stderr what it waits for and, through `on_wait`,
// for status, the first slice not ready ("mig slice-1") and what it is ("MIG slice-1 repairing").
// Then points the pod's workers at their slices' current addresses and returns the indexes of the
// workers whose address changed. nullopt: the user gave up. Every wait ends: a slice preempted or
// gone that `recreatable` says a recreation brings back throws SliceToRecreate; one gone that
// nobody recreates throws Error(kFailed) (someone deleted it); a slice not ready for `limit` throws
// Error(kUnreachable) naming what it waited for. Throws Error(kUnreachable) when gcloud fails or a
// slice came back with another number of workers.
std::optional<std::vector<int>> WaitForReadySlices(
    Pod& pod, const std::filesystem::path& cache_dir, std::chrono::seconds poll,
    const std::function<bool(std::chrono::seconds)>& wait,
    const std::function<void(const std::string& slice, const std::string& what)>& on_wait = {},
    const std::function<bool(const SourceNow&)>& recreatable = {},
    std::chrono::seconds limit = std::chrono::hours(24 * 365));

}  // namespace podrun
