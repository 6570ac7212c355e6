// See slice_wait.h.
#include "launcher/recovery/slice_wait.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "launcher/base/error.h"
#include "launcher/connect/worker_numbers.h"
#include "launcher/output/say.h"
#include "launcher/recovery/provisioner.h"

namespace podrun {

std::chrono::seconds ReadyPollInterval() { return ProvisionPollInterval(std::chrono::seconds(30)); }

namespace {

// The pod indexes of slice `slice`'s workers, in their order.
std::vector<int> SliceIndexes(const Pod& pod, size_t slice) {
  std::vector<int> out;
  for (const PodWorker& w : pod.workers) {
    if (static_cast<size_t>(w.slice) == slice) out.push_back(w.index);
  }
  return out;
}

// Points worker `index` at `vm`; true when its address changed.
bool PointWorker(Pod& pod, int index, const SourceWorker& vm) {
  PodWorker& w = pod.workers[static_cast<size_t>(index)];
  const std::string host = SshAddressOf(vm, pod.internal_ip);
  const bool changed = w.host.host != host || w.peer_address != vm.internal_ip;
  w.host.host = host;
  w.peer_address = vm.internal_ip;
  return changed;
}

std::string SliceName(const Pod& pod, size_t slice) {
  const std::vector<PodSourceRef> sources = PodSourcesOf(pod);
  return slice < sources.size() ? fmt::format("{} {}", PodSourceKindName(sources[slice].kind),
                                              sources[slice].query.name)
                                : fmt::format("slice {}", slice);
}

}  // namespace

bool MoveSliceTo(Pod& pod, size_t slice, const PodSourceRef& where) {
  if (slice >= pod.sources.size()) return false;
  SliceRef& at = pod.sources[slice].query;
  if (at.zone == where.query.zone) return false;
  Say(fmt::format("{} {} now lives in zone {} (it was in {})", PodSourceNoun(where.kind),
                  where.query.name, where.query.zone, at.zone));
  at.zone = where.query.zone;
  return true;
}

std::vector<int> PointSliceAt(Pod& pod, size_t slice, const SourceState& state) {
  const std::vector<int> indexes = SliceIndexes(pod, slice);
  if (state.workers.size() != indexes.size()) {
    throw Error(ExitCode::kUnreachable,
                fmt::format("{} came back with {} workers, not {}: nothing was restarted",
                            SliceName(pod, slice), state.workers.size(), indexes.size()));
  }
  std::vector<SourceWorker> vms = state.workers;
  const bool numbered = std::all_of(vms.begin(), vms.end(),
                                    [](const SourceWorker& w) { return w.tpu_worker_number; });
  std::vector<int> changed;
  if (!numbered) {
    // The API does not show the numbers: the VMs say them, through their agents at the new
    // addresses (taken in the API's order first).
    for (size_t k = 0; k < vms.size(); ++k) PointWorker(pod, indexes[k], vms[k]);
    const std::vector<int> numbers = AskTpuWorkerNumbers(pod, indexes);
    for (size_t k = 0; k < vms.size(); ++k) vms[k].tpu_worker_number = numbers[k];
    changed = indexes;  // asked again: every worker counts as moved
  }
  std::vector<const SourceWorker*> ordered(vms.size(), nullptr);
  for (const SourceWorker& vm : vms) {
    const int n = *vm.tpu_worker_number;
    if (n < 0 || static_cast<size_t>(n) >= vms.size() || ordered[static_cast<size_t>(n)]) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("{}: the VMs' TPU worker numbers are not 0..{} once each ({} says "
                              "{}): nothing was restarted",
                              SliceName(pod, slice), vms.size() - 1, vm.name, n));
    }
    ordered[static_cast<size_t>(n)] = &vm;
  }
  for (size_t k = 0; k < ordered.size(); ++k) {
    if (PointWorker(pod, indexes[k], *ordered[k]) && numbered) changed.push_back(indexes[k]);
  }
  return changed;
}

std::optional<std::vector<int>> WaitForReadySlices(
    Pod& pod, const std::filesystem::path& cache_dir, std::chrono::seconds poll,
    const std::function<bool(std::chrono::seconds)>& wait,
    const std::function<void(const std::string& slice, const std::string& what)>& on_wait,
    const std::function<bool(const SourceNow&)>& recreatable, std::chrono::seconds limit) {
  const std::vector<PodSourceRef> refs = PodSourcesOf(pod);
  if (refs.empty()) return std::vector<int>{};
  std::vector<std::unique_ptr<PodSource>> sources;
  for (const PodSourceRef& ref : refs) sources.push_back(MakePodSource(ref, cache_dir));
  std::string waiting_for;  // what was last announced, not repeated at every poll
  const auto began = std::chrono::steady_clock::now();
  while (true) {
    std::string not_ready;
    std::string short_form;  // "MIG slice-1 repairing", for status
    std::string first;       // the first slice not ready, "mig slice-1"
    bool gone = false;       // a slice preempted: it comes back only when created again
    for (size_t i = 0; i < sources.size(); ++i) {
      const SourceNow now = sources[i]->Now();
      if (now.ready()) continue;
      const bool recreate = (now.preempted() || now.deleted()) && recreatable && recreatable(now);
      if (recreate) {
        throw SliceToRecreate(
            ExitCode::kUnreachable,
            fmt::format("{} {} is {} while podrun waited for it", PodSourceNoun(refs[i].kind),
                        refs[i].query.name, now.state));
      }
      if (now.deleted()) {
        throw Error(ExitCode::kFailed,
                    fmt::format("{} {} no longer exists and podrun did not delete it: someone "
                                "removed it, so podrun does not bring it back (podrun up SPEC "
                                "creates it again)",
                                PodSourceNoun(refs[i].kind), refs[i].query.name));
      }
      gone = gone || now.preempted();
      if (first.empty()) first = SliceLabel(refs[i]);
      if (!not_ready.empty()) not_ready += ", ";
      not_ready +=
          fmt::format("{} {} is {}", PodSourceNoun(refs[i].kind), refs[i].query.name, now.state);
      short_form += fmt::format("{}{} {} {}", short_form.empty() ? "" : ", ",
                                refs[i].kind == PodSourceKind::kMig ? "MIG" : "TPU",
                                refs[i].query.name, now.state);
    }
    if (not_ready.empty()) {
      std::vector<int> changed;
      for (size_t i = 0; i < sources.size(); ++i) {
        const SourceState state = sources[i]->Describe(/*refresh=*/true, nullptr);
        if (!state.not_ready.empty()) {
          not_ready = state.not_ready;  // changed between the two questions: asked again
          break;
        }
        for (int k : PointSliceAt(pod, i, state)) changed.push_back(k);
      }
      if (not_ready.empty()) {
        if (!waiting_for.empty()) {
          Say(fmt::format("the pod's {} READY again{}",
                          sources.size() == 1 ? "slice is" : "slices are",
                          changed.empty() ? "" : ", at new addresses"));
        }
        return changed;
      }
    }
    const auto waited =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - began);
    if (waited >= limit) {
      throw Error(ExitCode::kUnreachable,
                  fmt::format("the pod is still not READY after {} s ({}): podrun gave up waiting "
                              "(create: capacity_wait sets how long)",
                              waited.count(), not_ready));
    }
    if (on_wait) {
      on_wait(first, fmt::format("{}, for {}s", short_form.empty() ? not_ready : short_form,
                                 waited.count()));
    }
    if (not_ready != waiting_for) {
      Say(
          fmt::format("waiting for the pod to be READY again: {} (gcloud, asked every {} s; "
                      "Ctrl-C to give up){}",
                      not_ready, poll.count(),
                      gone ? "; a preempted slice comes back only when created again: add "
                             "pod.create to the spec and podrun recreates it"
                           : ""));
      waiting_for = not_ready;
    }
    if (!wait(poll)) return std::nullopt;
  }
}

}  // namespace podrun
