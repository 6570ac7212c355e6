// The job attempt's step record on the worker (`jobs/<id>/<attempt>/steps`, a serialized
// StepRecord of proto/agent.proto): written by the supervisor while the job runs, read by the
// agent for the Steps and Top RPCs. Written atomically (a scratch file created exclusively, never
// through a symlink, mode 0600, then renamed over the record); read without following a symlink.
#pragma once

#include <optional>

#include "proto/agent.pb.h"
#include "worker/jobdir/job_dir.h"

namespace podrun::agent {

std::filesystem::path StepFilePath(const JobDir& dir);
// Throws std::system_error (a full disk: nothing is left half-written).
void WriteStepFile(const JobDir& dir, const v1::StepRecord& record);
// nullopt: no record (no pattern, no step yet), or one that cannot be read or parsed.
std::optional<v1::StepRecord> ReadStepFile(const JobDir& dir);

}  // namespace podrun::agent
