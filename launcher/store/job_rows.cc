// See job_rows.h.
#include "launcher/store/job_rows.h"

#include "launcher/base/error.h"

namespace podrun {

nlohmann::json HostsToJson(const std::vector<JobHost>& hosts) {
  nlohmann::json out = nlohmann::json::array();
  for (const JobHost& h : hosts) {
    out.push_back({{"index", h.index},
                   {"user", h.user},
                   {"host", h.host},
                   {"port", h.port},
                   {"address", h.address}});
  }
  return out;
}

std::vector<JobHost> HostsFromJson(const std::string& text) {
  std::vector<JobHost> hosts;
  for (const nlohmann::json& h : nlohmann::json::parse(text)) {
    hosts.push_back({h.at("index").get<int>(), h.at("user").get<std::string>(),
                     h.at("host").get<std::string>(), h.at("port").get<int>(),
                     h.at("address").get<std::string>()});
  }
  return hosts;
}

const char* const kJobColumns =
    "id, name, pod, spec_text, spec_path, hosts_json, created_ns, env_overrides_json, "
    "secret_names_json, options_json";

JobRecord ReadJob(Statement& s) {
  JobRecord job;
  job.id = s.Text(0);
  job.name = s.Text(1);
  job.pod = s.Text(2);
  job.spec_text = s.Text(3);
  job.spec_path = s.Text(4);
  job.hosts = HostsFromJson(s.Text(5));
  job.created_ns = s.Int(6);
  job.env_overrides = nlohmann::json::parse(s.Text(7)).get<std::map<std::string, std::string>>();
  job.secret_names = nlohmann::json::parse(s.Text(8)).get<std::vector<std::string>>();
  job.options_json = s.Text(9);
  return job;
}

const char* const kAttemptColumns =
    "job_id, number, started_ns, ended_ns, state, workers_json, exit_code, "
    "COALESCE(resumed_from, ''), COALESCE(cause, ''), COALESCE(reason, 'launch'), "
    "COALESCE(ended_by, '')";

AttemptRecord ReadAttempt(Statement& s, const std::filesystem::path& path) {
  AttemptRecord a;
  a.job_id = s.Text(0);
  a.number = static_cast<int>(s.Int(1));
  a.started_ns = s.Int(2);
  a.ended_ns = s.OptionalInt(3);
  std::string state = s.Text(4);
  std::optional<AttemptState> parsed = ParseAttemptState(state);
  if (!parsed)
    throw Error(ExitCode::kFailed, path.string() + ": bad attempt state '" + state + "'");
  a.state = *parsed;
  a.workers = nlohmann::json::parse(s.Text(5)).get<std::vector<int>>();
  a.exit_code = s.OptionalInt32(6);
  a.resumed_from = s.Text(7);
  a.cause = s.Text(8);
  a.reason = ParseAttemptReason(s.Text(9)).value_or(AttemptReason::kLaunch);
  a.ended_by = ParseAttemptEnd(s.Text(10));
  return a;
}

}  // namespace podrun
