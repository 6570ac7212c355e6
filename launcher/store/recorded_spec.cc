// See recorded_spec.h.
#include "launcher/store/recorded_spec.h"

#include <fmt/format.h>

#include "launcher/base/error.h"
#include "launcher/output/say.h"

namespace podrun {

std::string AbsoluteSpecPath(const std::string& path) {
  return std::filesystem::absolute(path).lexically_normal().string();
}

void RefuseRelativeSpecPath(const JobRecord& job) {
  if (job.spec_path.empty() || !std::filesystem::path(job.spec_path).is_relative()) return;
  throw Error(ExitCode::kUsage,
              fmt::format("job {} was recorded with the relative spec path '{}' (by an older "
                          "podrun): a keeper cannot tell which folder it was launched from; run "
                          "`podrun rerun {}` in that folder (it records the path, and keepers "
                          "follow it from then on)",
                          job.id, job.spec_path, job.id));
}

JobSpec RecordedSpec(JobStore& store, JobRecord& job) {
  if (!job.spec_path.empty() && std::filesystem::path(job.spec_path).is_relative()) {
    const std::string resolved = AbsoluteSpecPath(job.spec_path);
    Say(fmt::format(
        "job {} was recorded with the relative spec path '{}' (by an older podrun); taking it "
        "as {} (against this folder), recorded for every later command",
        job.id, job.spec_path, resolved));
    store.SetSpecPath(job.id, resolved);
    job.spec_path = resolved;
  }
  return ParseRecordedSpec(job.spec_text, job.spec_path);
}

}  // namespace podrun
