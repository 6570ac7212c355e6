// An attempt's phases before the run: connect, the TPU identity check, setup, prepare, start
// (the sync and the mounts are SyncPhase's and MountsPhase's).
#include "launcher/attempt/phase_fan_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "launcher/attempt/run_request.h"
#include "launcher/attempt/setup_phase.h"
#include "launcher/attempt/start_test_hooks.h"
#include "launcher/connect/clock_sync.h"
#include "launcher/connect/job_pod.h"
#include "launcher/output/attempt_output.h"
#include "launcher/output/labelled_output.h"
#include "launcher/output/say.h"

namespace podrun {

namespace {

using Clock = std::chrono::steady_clock;

// How far ahead the lockstep start is scheduled at least, whatever was measured.
constexpr auto kMinStartLead = std::chrono::milliseconds(25);

}  // namespace

void PhaseFanOut::ConnectAll() {
  times_.Begin("agents");
  workers_.ForEach([&](AttemptWorker& w) {
    recorder_.UpdateWorker(w.index, {.state = WorkerState::kConnecting});
    try {
      // The agent's clock offset, from the quickest of a few Hellos (NTP style), so that the
      // start can be scheduled at one instant on every worker.
      w.connection.Connect(plan_.pod.cloud_tpu ? AgentConnection::Greeting::kMeasureClockOnly
                                               : AgentConnection::Greeting::kMeasureClock);
    } catch (const std::exception& e) {
      w.error = e.what();
    }
    progress_.Done(w.index);
  });
  times_.End();
}

bool PhaseFanOut::CheckTpuWorkerNumbers() {
  if (plan_.pod.cloud_tpu) return true;  // discovered: the ranks are the VMs' own numbers
  std::vector<std::string> wrong;
  bool any_tpu = false;
  for (auto& w : workers_.all()) {
    if (!w->connection.hello().tpu_worker_number) continue;
    any_tpu = true;
    if (*w->connection.hello().tpu_worker_number != w->index) {
      wrong.push_back(fmt::format("{} is TPU worker {}", w->description(),
                                  *w->connection.hello().tpu_worker_number));
    }
  }
  if (!wrong.empty()) {
    std::string message = fmt::format(
        "job {} did not start: the order of --hosts contradicts the TPU runtime's worker "
        "numbers (rank K must be TPU worker K): ",
        plan_.job.id);
    for (size_t i = 0; i < wrong.size(); ++i) message += (i ? "; " : "") + wrong[i];
    Say(message + ". List the hosts in TPU worker order, or use --tpu NAME --zone ZONE");
    return false;
  }
  tpu_vms_ = any_tpu;
  return true;
}

void PhaseFanOut::SyncAll() {
  if (!plan_.spec.sync.empty()) times_.Begin("sync");
  sync_.Run(progress_);
  times_.End();
}

void PhaseFanOut::MountAll() {
  if (!plan_.spec.mounts.empty()) times_.Begin("mounts");
  mounts_.Run(progress_);
  times_.End();
}

void PhaseFanOut::SetupAll() {
  if (plan_.spec.setup.empty()) return;
  times_.Begin("setup");
  const std::vector<std::string> addresses = WorkerAddresses(plan_, workers_);
  std::vector<SetupWorker> setup;
  for (auto& w : workers_.all()) {
    if (!w->error.empty()) continue;
    AttemptWorker* worker = w.get();
    SetupWorker s;
    s.index = w->index;
    s.description = w->description();
    s.client = w->client();
    try {
      s.request = MakeRunRequest(plan_, w->index, addresses, tpu_vms_);
    } catch (const std::exception& e) {
      w->error = fmt::format("{}: setup: {}", s.description, e.what());
      continue;
    }
    s.hooks = {
        [worker] { return worker->client(); }, [worker] { return worker->Reconnect(); }, Say, {}};
    setup.push_back(std::move(s));
  }
  const auto began = Clock::now();
  Say(fmt::format("setup on {} worker{}{}", setup.size(), setup.size() == 1 ? "" : "s",
                  plan_.force_setup ? " (--force-setup)" : ""));
  AttemptOutput output(plan_.home / "jobs" / plan_.job.id / std::to_string(plan_.attempt) / "setup",
                       LabelledOutput::ShouldColor(STDOUT_FILENO));
  std::vector<int> cached, ran;
  for (const SetupResult& r :
       RunSetup(plan_.spec, plan_.setup_stamp, plan_.force_setup, setup, output)) {
    AttemptWorker& w = workers_.at(r.index);
    times_.Done(r.index, r.ended_ns > 0 ? std::optional<int64_t>(r.ended_ns) : std::nullopt);
    if (!r.error.empty()) {
      w.error = r.error;
      for (const std::string& line : output.LastLines(r.index)) {
        w.error += "\n  | " + line;
      }
    } else {
      (r.cached ? cached : ran).push_back(r.index);
    }
  }
  times_.End();
  Say(DescribeSetup(setup.size(), ran, cached, SecondsSince(began)));
}

void PhaseFanOut::PrepareAll() {
  const std::vector<std::string> addresses = WorkerAddresses(plan_, workers_);
  recorder_.SetJobHosts(JobHostsOf(plan_.pod, addresses));
  times_.Begin("start");  // prepare to start, for each worker: ended by StartAll
  progress_.Begin("prepare");
  workers_.ForEach([&](AttemptWorker& w) {
    if (!w.error.empty()) return;
    try {
      const AgentPrepareRequest request = MakeRunRequest(plan_, w.index, addresses, tpu_vms_);
      const AgentPrepareReply reply = w.client()->Prepare(request);
      for (const std::string& action : reply.accelerator_actions) {
        Say(fmt::format("{}: freeing accelerators: {}", w.description(), action));
      }
      recorder_.UpdateWorker(w.index, {.state = WorkerState::kPrepared});
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: prepare: {}", w.description(), e.what());
    }
    progress_.Done(w.index);
  });
}

std::chrono::nanoseconds PhaseFanOut::MeasureReach() {
  const auto began = Clock::now();
  std::mutex mutex;
  Clock::time_point last = began;
  workers_.ForEach([&](AttemptWorker& w) {
    auto client = w.client();
    if (!w.error.empty() || !client) return;
    try {
      client->Hello(/*tpu_worker_number=*/false);  // light: never the metadata server's wait
    } catch (const std::exception&) {
      return;  // its Start fails and says why
    }
    std::lock_guard lock(mutex);
    last = std::max(last, Clock::now());
  });
  return last - began;
}

void PhaseFanOut::StartAll() {
  // GO at one instant: each agent gets the same target in its own clock, far enough ahead that
  // every Start arrives before it (Start blocks until the instant: one thread per worker). How
  // far is measured here, on this pod now: a Hello to every worker at once, the way Start goes.
  const std::chrono::nanoseconds reach = MeasureReach();
  const std::chrono::nanoseconds lead = StartLead(kMinStartLead, reach);
  if (lead < 2 * reach) {
    Say(fmt::format(
        "the workers answered slowly (a message to all of them took {:.1f} s): the "
        "start is scheduled {:.1f} s ahead, the most an agent waits; some may start "
        "late",
        std::chrono::duration<double>(reach).count(), std::chrono::duration<double>(lead).count()));
  }
  const StartTestHooks hooks = StartTestHooks::FromEnvironment();
  // A worker whose start is not confirmed within this stops its job itself (ConfirmStarts).
  const std::chrono::milliseconds confirm_within =
      StartConfirmWindow(lead, reach, hooks.confirm_slack.value_or(kStartConfirmSlack));
  // The offsets the start uses: what the clocks provably differ by, one value for the agents
  // whose clocks agree with each other (StartOffsets).
  std::vector<ClockOffset> measured;
  std::vector<AttemptWorker*> in;
  for (const auto& w : workers_.all()) {
    if (!w->error.empty()) continue;
    measured.push_back(w->connection.clock());
    in.push_back(w.get());
  }
  const std::vector<int64_t> offsets = StartOffsets(measured);
  const int64_t target_ns = NowUnixNs() + lead.count();
  for (size_t i = 0; i < in.size(); ++i) {
    in[i]->start_at_ns = target_ns;
    in[i]->start_offset_ns = offsets[i];
  }
  progress_.Begin("start");
  std::map<const AttemptWorker*, size_t> positions;  // rank order, for the test hook
  for (const auto& w : workers_.all()) positions.emplace(w.get(), positions.size());
  std::atomic<size_t> answered{0};
  workers_.ForEach([&](AttemptWorker& w) {
    hooks.StallBeforeStart(positions.at(&w));
    auto client = w.client();
    try {
      w.start = client->Start(plan_.job.id, static_cast<uint32_t>(plan_.attempt),
                              target_ns + w.start_offset_ns, confirm_within);
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: start: {}", w.description(), e.what());
    }
    progress_.Done(w.index);
    hooks.SayWhenStalled(++answered);
  });
  times_.End();
  ConfirmStarts(confirm_within);
}

void PhaseFanOut::ConfirmStarts(std::chrono::milliseconds window) {
  // The gang runs whole or not at all: with stop_all, a worker whose Start failed means the
  // others are stopped (by the gang driver, or by their own supervisors if this launcher is
  // lost meanwhile), so nobody is confirmed; with `continue` the started ones run on.
  if (!workers_.AllIn() && plan_.spec.on_failure == OnFailure::kStopAll) return;
  workers_.ForEach([&](AttemptWorker& w) {
    auto client = w.client();
    if (!w.error.empty() || !client) return;
    try {
      client->Confirm(plan_.job.id, static_cast<uint32_t>(plan_.attempt));
    } catch (const std::exception& e) {
      // Its supervisor stops the job once the window has passed; the gang driver sees that
      // end as the worker's failure.
      Say(
          fmt::format("{}: the start could not be confirmed ({}): its agent stops the job {:.1f} s "
                      "after its start",
                      w.description(), e.what(), std::chrono::duration<double>(window).count()));
    }
  });
}

void PhaseFanOut::ReleasePrepared() {
  times_.End();  // the start phase ends here for every worker: GO never comes
  // The agents hold each prepared job's process, waiting for GO: end them, GO never comes.
  workers_.ForEach([&](AttemptWorker& w) {
    auto client = w.client();
    if (!client) return;
    try {
      client->Stop(plan_.job.id, static_cast<uint32_t>(plan_.attempt), std::chrono::seconds(0));
    } catch (const std::exception&) {
      // Unreachable: its agent ends the waiting process when it exits.
    }
  });
}

}  // namespace podrun
