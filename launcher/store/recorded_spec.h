// The spec a job was launched with, re-read from the job store by whatever drives or inspects
// the job later (rerun, stop, why, the keeper), wherever it was started (docs/reference.md,
// "Provisioning and recovery"; docs/design.md decision 21): its paths are the absolute ones
// recorded at launch, never resolved against the current folder, and nothing on disk is read.
#pragma once

#include <filesystem>
#include <string>

#include "launcher/spec/spec.h"
#include "launcher/store/job_store.h"

namespace podrun {

// The absolute, normalised form of a spec path given at launch (against the current folder).
std::string AbsoluteSpecPath(const std::string& path);

// The job's recorded spec. A store written before podrun recorded absolute paths holds the
// path as typed: it is resolved once, against the current folder (the only folder known),
// said on stderr, and recorded, so that every later reader gets the same tree. `job` is
// updated to match.
JobSpec RecordedSpec(JobStore& store, JobRecord& job);

// Throws Error(kUsage) when the job's spec path was recorded relative (by an older podrun),
// saying to run `podrun rerun JOB` in the folder it was launched from: a keeper, whose folder
// is /, never resolves it (`sync: .` would be the whole filesystem).
void RefuseRelativeSpecPath(const JobRecord& job);

}  // namespace podrun
