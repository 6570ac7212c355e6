// Running the spec's setup before the barrier (see setup_phase.h).
#include "launcher/attempt/setup_phase.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "launcher/base/error.h"
#include "launcher/base/parallel_for.h"
#include "launcher/connect/job_agents.h"
#include "launcher/pod/worker_range.h"
#include "launcher/store/job_store.h"
#include "proto/sha256.h"

namespace podrun {
namespace {

void Field(std::string* out, std::string_view name, std::string_view value) {
  *out += name;
  *out += '\0';
  *out += std::to_string(value.size());
  *out += '\0';
  *out += value;
}

}  // namespace

std::string SetupJobId(const std::string& job_id) { return job_id + ".setup"; }

std::string SetupStamp(const JobSpec& spec, const std::map<std::string, std::string>& overrides) {
  std::string key;
  Field(&key, "setup", spec.setup);
  Field(&key, "workdir", spec.workdir);
  for (const auto& [name, value] : spec.env) Field(&key, "env " + name, value);
  for (const auto& [name, value] : overrides) Field(&key, "-e " + name, value);
  for (const auto& name : spec.secret_env) Field(&key, "secret", name);
  const std::filesystem::path base = SetupInputsBase(spec);
  for (const std::string& input : spec.setup_inputs) {
    const std::filesystem::path path = base / input;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw UsageError(fmt::format("{}: setup_inputs: cannot read {}", spec.path, path.string()));
    }
    std::stringstream content;
    content << in.rdbuf();
    Field(&key, "input " + input, Sha256Hex(content.str()));
  }
  return Sha256Hex(key);
}

std::vector<SetupResult> RunSetup(const JobSpec& spec, const std::string& stamp, bool force,
                                  const std::vector<SetupWorker>& workers, AttemptOutput& output) {
  std::vector<SetupResult> results(workers.size());
  // Prepare and start everywhere at once; a cached worker runs nothing.
  ParallelFor(workers.size(), [&](size_t i) {
    const SetupWorker& w = workers[i];
    SetupResult& r = results[i];
    r.index = w.index;
    try {
      AgentPrepareRequest request = w.request;
      request.job_id = SetupJobId(w.request.job_id);
      request.run = spec.setup;
      request.setup_stamp = stamp;
      request.force_setup = force;
      request.free_accelerators = false;
      request.progress.clear();  // setup's output has no steps
      if (w.client->Prepare(request).setup_cached) {
        r.cached = true;
        r.ended_ns = NowUnixNs();
        return;
      }
      w.client->Start(request.job_id, request.attempt);
    } catch (const std::exception& e) {
      r.error = fmt::format("{}: setup: {}", w.description, e.what());
      r.ended_ns = NowUnixNs();
    }
  });
  std::vector<LogFollowJob> jobs;
  std::vector<size_t> followed;
  for (size_t i = 0; i < workers.size(); ++i) {
    if (results[i].cached || !results[i].error.empty()) continue;
    LogFollowJob job;
    job.params.job_id = SetupJobId(workers[i].request.job_id);
    job.params.attempt = workers[i].request.attempt;
    job.params.description = workers[i].description;
    job.hooks = workers[i].hooks;
    const int index = workers[i].index;
    job.on_batch = [&output, index](std::vector<LogRecord>&& records) {
      if (!records.empty()) output.Add(index, records);
      return true;
    };
    jobs.push_back(std::move(job));
    followed.push_back(i);
  }
  FollowLogs(std::move(jobs), [&](size_t j, const LogFollowResult& result) {
    SetupResult& r = results[followed[j]];
    r.ended_ns = NowUnixNs();
    output.Finish(r.index);
    if (!result.end) {
      r.error = fmt::format("{}: setup: {}", workers[followed[j]].description,
                            result.lost.empty() ? "its log could not be read" : result.lost);
      return;
    }
    r.end = result.end;
    if (StateOfEnd(*result.end) != WorkerState::kExited || result.end->exit_code != 0) {
      r.error = fmt::format("{}: setup failed: {}", workers[followed[j]].description,
                            DescribeProcessEnd(*result.end));
    }
  });
  return results;
}

std::string DescribeSetup(size_t workers, const std::vector<int>& ran,
                          const std::vector<int>& cached, double seconds) {
  return fmt::format(
      "setup {} in {:.2f} s{}{}", ran.size() + cached.size() == workers ? "done" : "failed",
      seconds, ran.empty() ? "" : fmt::format("; ran on w{}", FormatWorkerRange(ran)),
      cached.empty() ? "" : fmt::format("; cached (unchanged) on w{}", FormatWorkerRange(cached)));
}

}  // namespace podrun
