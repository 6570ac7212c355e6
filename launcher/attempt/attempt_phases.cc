// An attempt's phases before the run: connect, the TPU identity check, setup, prepare, start.
#include "launcher/job/attempt_runner_parts.h"

namespace podrun::attempt_internal {

void Runner::ConnectAll() {
  ForEachParallel(workers_, [&](Worker& w) {
    UpdateWorker(w.index, {.state = WorkerState::kConnecting});
    try {
      auto channel = w.link->Connect();
      auto client = std::make_shared<AgentClient>(channel);
      // The agent's clock offset, from the quickest of a few Hellos (NTP style), so that the
      // start can be scheduled at one instant on every worker.
      const ClockOffset offset = MeasureClockOffset(*client, kClockProbes, &w.hello);
      w.clock_offset_ns = offset.offset_ns;
      w.rtt_ns = offset.rtt_ns;
      std::lock_guard lock(w.client_mutex);
      w.client = client;
    } catch (const std::exception& e) {
      w.error = e.what();
    }
    Progressed(w.index);
  });
}

std::vector<std::string> Runner::WorkerAddresses() const {
  std::vector<std::string> addresses;
  for (const PodWorker& pw : plan_.pod.workers) {
    auto it = by_index_.find(pw.index);
    if (!pw.peer_address.empty()) {  // a discovered TPU VM: its internal IP
      addresses.push_back(pw.peer_address);
      continue;
    }
    addresses.push_back(it != by_index_.end() && it->second->error.empty()
                            ? it->second->link->peer_address()
                            : pw.host.host);
  }
  return addresses;
}

bool Runner::CheckTpuWorkerNumbers() {
  if (plan_.pod.cloud_tpu) return true;  // discovered: the ranks are the VMs' own numbers
  std::vector<std::string> wrong;
  bool any_tpu = false;
  for (auto& w : workers_) {
    if (!w->hello.tpu_worker_number) continue;
    any_tpu = true;
    if (*w->hello.tpu_worker_number != w->index) {
      wrong.push_back(
          fmt::format("{} is TPU worker {}", w->link->description(), *w->hello.tpu_worker_number));
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

void Runner::SetupAll() {
  if (plan_.spec.setup.empty()) return;
  const std::vector<std::string> addresses = WorkerAddresses();
  std::vector<SetupWorker> setup;
  for (auto& w : workers_) {
    if (!w->error.empty()) continue;
    Worker* worker = w.get();
    SetupWorker s;
    s.index = w->index;
    s.description = w->link->description();
    s.client = Client(*w);
    try {
      s.request = MakeRunRequest(plan_, w->index, addresses, tpu_vms_);
    } catch (const std::exception& e) {
      w->error = fmt::format("{}: setup: {}", s.description, e.what());
      continue;
    }
    s.hooks = {[this, worker] { return Client(*worker); },
               [this, worker] { return Reconnect(*worker); },
               Say,
               {}};
    setup.push_back(std::move(s));
  }
  const auto began = Clock::now();
  Say(fmt::format("setup on {} worker{}{}", setup.size(), setup.size() == 1 ? "" : "s",
                  plan_.force_setup ? " (--force-setup)" : ""));
  LogMerger merger(plan_.home / "jobs" / plan_.job.id / std::to_string(plan_.attempt) / "setup",
                   LabelledOutput::ShouldColor(STDOUT_FILENO));
  std::vector<int> cached, ran;
  for (const SetupResult& r :
       RunSetup(plan_.spec, plan_.setup_stamp, plan_.force_setup, setup, merger)) {
    Worker& w = *by_index_.at(r.index);
    if (!r.error.empty()) {
      w.error = r.error;
      for (const std::string& line : merger.LastLines(r.index)) {
        w.error += "\n  | " + line;
      }
    } else {
      (r.cached ? cached : ran).push_back(r.index);
    }
  }
  Say(DescribeSetup(setup.size(), ran, cached, SecondsSince(began)));
}

void Runner::PrepareAll() {
  const std::vector<std::string> addresses = WorkerAddresses();
  {
    std::lock_guard lock(store_mutex_);
    try {
      store_.SetJobHosts(plan_.job.id, JobHostsOf(plan_.pod, addresses));
    } catch (const Error& e) {
      Say(fmt::format("warning: job store: {}", e.what()));
    }
  }
  const auto fan_out_began = Clock::now();
  BeginProgress("prepare");
  ForEachParallel(workers_, [&](Worker& w) {
    if (!w.error.empty()) return;
    try {
      const AgentPrepareRequest request = MakeRunRequest(plan_, w.index, addresses, tpu_vms_);
      const AgentPrepareReply reply = Client(w)->Prepare(request);
      for (const std::string& action : reply.accelerator_actions) {
        Say(fmt::format("{}: freeing accelerators: {}", w.link->description(), action));
      }
      UpdateWorker(w.index, {.state = WorkerState::kSetup});
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: prepare: {}", w.link->description(), e.what());
    }
    Progressed(w.index);
  });
  prepare_fan_out_ = Clock::now() - fan_out_began;
}

void Runner::StartAll() {
  // GO at one instant: each agent gets the same target in its own clock, far enough ahead that
  // every Start arrives before it (Start blocks until the instant: one thread per worker).
  int64_t slowest_rtt_ns = 0;
  for (auto& w : workers_) slowest_rtt_ns = std::max(slowest_rtt_ns, w->rtt_ns);
  const int64_t target_ns =
      NowUnixNs() + StartLead(kMinStartLead, slowest_rtt_ns, prepare_fan_out_).count();
  BeginProgress("start");
  ForEachParallel(workers_, [&](Worker& w) {
    auto client = Client(w);
    try {
      w.start = client->Start(plan_.job.id, static_cast<uint32_t>(plan_.attempt),
                              target_ns + w.clock_offset_ns);
    } catch (const std::exception& e) {
      w.error = fmt::format("{}: start: {}", w.link->description(), e.what());
    }
    Progressed(w.index);
  });
  std::lock_guard lock(gang_mutex_);
  for (auto& w : workers_) {
    if (w->error.empty()) {
      gang_.Started(w->index);
      UpdateWorker(w->index, {.state = WorkerState::kRunning, .start_ns = w->start.start_time_ns});
    } else {
      Say(w->error);
      UpdateWorker(w->index, {.state = WorkerState::kFailed, .error = w->error});
      if (gang_.StartFailed(w->index, w->error)) StopRunning();
    }
  }
}

void Runner::ReleasePrepared() {
  // The agents hold each prepared job's process, waiting for GO: end them, GO never comes.
  ForEachParallel(workers_, [&](Worker& w) {
    auto client = Client(w);
    if (!client) return;
    try {
      client->Stop(plan_.job.id, static_cast<uint32_t>(plan_.attempt), std::chrono::seconds(0));
    } catch (const std::exception&) {
      // Unreachable: its agent ends the waiting process when it exits.
    }
  });
}

}  // namespace podrun::attempt_internal
