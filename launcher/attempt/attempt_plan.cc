// Building an attempt's plan, for `launch` and `rerun` alike.
#include "launcher/attempt/attempt_plan.h"

#include "launcher/attempt/setup_phase.h"
#include "launcher/spec/job_env.h"

namespace podrun {

AttemptInputs ReadAttemptInputs(const JobSpec& spec,
                                const std::map<std::string, std::string>& overrides) {
  AttemptInputs inputs;
  inputs.secrets = ReadSecrets(spec.secret_env);
  if (!spec.setup.empty()) inputs.setup_stamp = SetupStamp(spec, overrides);
  return inputs;
}

AttemptPlan MakeAttemptPlan(JobRecord job, int attempt, JobSpec spec, Pod pod,
                            std::filesystem::path home, AttemptInputs inputs,
                            std::map<std::string, std::string> overrides, AttemptOptions options) {
  AttemptPlan plan;
  plan.job = std::move(job);
  plan.attempt = attempt;
  plan.spec = std::move(spec);
  plan.pod = std::move(pod);
  plan.home = std::move(home);
  plan.secrets = std::move(inputs.secrets);
  plan.overrides = std::move(overrides);
  plan.detach = options.detach;
  plan.force_setup = options.force_setup;
  plan.setup_stamp = std::move(inputs.setup_stamp);
  return plan;
}

}  // namespace podrun
